"""mtagent.context.compaction"""
