"""mtagent.context.session_memory"""
