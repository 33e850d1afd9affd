"""mtagent.context"""
