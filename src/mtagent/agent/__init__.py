"""mtagent.agent"""
