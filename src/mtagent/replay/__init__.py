"""mtagent.replay"""
