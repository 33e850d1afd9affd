"""mtagent.context.static"""
