"""mtagent.tools"""
