"""mtagent.session"""
