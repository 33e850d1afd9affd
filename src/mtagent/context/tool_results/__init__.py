"""mtagent.context.tool_results"""
