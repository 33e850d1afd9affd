"""mtagent.integrations"""
