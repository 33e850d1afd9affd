"""The PostgreSQL backend: many workers, one store, tenants kept apart, an audit trail.

Import :class:`~mtagent.session.postgres.store.PostgresStore` from its module; this package
needs the ``postgres`` extra (``pip install 'mtagent[postgres]'``).
"""
