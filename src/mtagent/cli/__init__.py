"""mtagent.cli"""
