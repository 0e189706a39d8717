"""Where a run executes: the Spark session, small-run planning, the JVM class archive, the Python workers'
launcher, file systems and Py4J's lookups of JVM classes and methods.

- :mod:`~cdcnorm.runtime.session`: `get_spark`, the embedded or submitted session;
- :mod:`~cdcnorm.runtime.small_runs`: plans and JVM options for small inputs;
- :mod:`~cdcnorm.runtime.jvm_archive`: the JVM's class-data-sharing archive of Spark's classes;
- :mod:`~cdcnorm.runtime.worker_python`: the launcher of Spark's Python workers;
- :mod:`~cdcnorm.runtime.fs`: listing and opening input on local disks and object stores (Hadoop, fsspec);
- :mod:`~cdcnorm.runtime.user_cache`: the user's cache folder;
- :mod:`~cdcnorm.runtime.jvm_lookups`: Py4J's lookups of JVM classes and methods, kept.
"""

from cdcnorm.runtime import jvm_lookups

# Every cdcnorm module that reaches the JVM (the session, lake reads, normalize, apply, compare) imports a module of
# this package: Py4J's lookups are kept from the first such import on.
jvm_lookups.install()
