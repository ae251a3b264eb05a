# Versioned SQL of tracedb, shipped inside the package as tracedb.sql.
