"""Our rocpd schema-v3 DDL: the tables (suffixed with a uuid) and the plain-name views.

Written here from the documented column facts (FORMATS.md), so that rocprofv3's own readers
(`rocpd` views such as `kernels`, `top_kernels`, `busy`) and ours both find what they expect.
"""

from __future__ import annotations

import os
import time
import uuid

SCHEMA_VERSION = "3"

# (table, columns after "id INTEGER PRIMARY KEY" and "guid"). Column names and order follow the
# documented rocpd v3 layout; types are SQLite affinities.
_TABLES: list[tuple[str, list[str]]] = [
    ("rocpd_string", ["string TEXT NOT NULL UNIQUE"]),
    ("rocpd_info_node", ["hash BIGINT NOT NULL UNIQUE", "machine_id TEXT NOT NULL UNIQUE", "system_name TEXT",
                         "hostname TEXT", "release TEXT", "version TEXT", "hardware_name TEXT", "domain_name TEXT"]),
    ("rocpd_info_process", ["nid INTEGER NOT NULL", "ppid INTEGER", "pid INTEGER NOT NULL", "init BIGINT",
                            "fini BIGINT", "start BIGINT", '"end" BIGINT', "command TEXT",
                            "environment JSONB NOT NULL DEFAULT '{}'", "extdata JSONB NOT NULL DEFAULT '{}'"]),
    ("rocpd_info_thread", ["nid INTEGER NOT NULL", "ppid INTEGER", "pid INTEGER NOT NULL", "tid INTEGER NOT NULL",
                           "name TEXT", "start BIGINT", '"end" BIGINT', "extdata JSONB NOT NULL DEFAULT '{}'"]),
    ("rocpd_info_agent", ["nid INTEGER NOT NULL", "pid INTEGER NOT NULL", "type TEXT CHECK (type IN ('CPU', 'GPU'))",
                          "absolute_index INTEGER", "logical_index INTEGER", "type_index INTEGER", "uuid INTEGER",
                          "name TEXT", "model_name TEXT", "vendor_name TEXT", "product_name TEXT", "user_name TEXT",
                          "extdata JSONB NOT NULL DEFAULT '{}'"]),
    ("rocpd_info_queue", ["nid INTEGER NOT NULL", "pid INTEGER NOT NULL", "name TEXT",
                          "extdata JSONB NOT NULL DEFAULT '{}'"]),
    ("rocpd_info_stream", ["nid INTEGER NOT NULL", "pid INTEGER NOT NULL", "name TEXT",
                           "extdata JSONB NOT NULL DEFAULT '{}'"]),
    ("rocpd_info_pmc", ["nid INTEGER NOT NULL", "pid INTEGER NOT NULL", "agent_id INTEGER", "target_arch TEXT",
                        "event_code INT", "instance_id INTEGER", "name TEXT NOT NULL", "symbol TEXT NOT NULL",
                        "description TEXT", "long_description TEXT DEFAULT ''", "component TEXT",
                        "units TEXT DEFAULT ''", "value_type TEXT", "block TEXT", "expression TEXT",
                        "is_constant INTEGER", "is_derived INTEGER", "extdata JSONB NOT NULL DEFAULT '{}'"]),
    ("rocpd_info_code_object", ["nid INTEGER NOT NULL", "pid INTEGER NOT NULL", "agent_id INTEGER", "uri TEXT",
                                "load_base BIGINT", "load_size BIGINT", "load_delta BIGINT", "storage_type TEXT",
                                "extdata JSONB NOT NULL DEFAULT '{}'"]),
    ("rocpd_info_kernel_symbol", ["nid INTEGER NOT NULL", "pid INTEGER NOT NULL", "code_object_id INTEGER NOT NULL",
                                  "kernel_name TEXT", "display_name TEXT", "kernel_object INTEGER",
                                  "kernarg_segment_size INTEGER", "kernarg_segment_alignment INTEGER",
                                  "group_segment_size INTEGER", "private_segment_size INTEGER", "sgpr_count INTEGER",
                                  "arch_vgpr_count INTEGER", "accum_vgpr_count INTEGER",
                                  "extdata JSONB NOT NULL DEFAULT '{}'"]),
    ("rocpd_track", ["nid INTEGER NOT NULL", "pid INTEGER", "tid INTEGER", "name_id INTEGER",
                     "extdata JSONB NOT NULL DEFAULT '{}'"]),
    ("rocpd_event", ["category_id INTEGER", "stack_id INTEGER", "parent_stack_id INTEGER", "correlation_id INTEGER",
                     "call_stack JSONB NOT NULL DEFAULT '{}'", "line_info JSONB NOT NULL DEFAULT '{}'",
                     "extdata JSONB NOT NULL DEFAULT '{}'"]),
    ("rocpd_arg", ["event_id INTEGER NOT NULL", "position INTEGER NOT NULL", "type TEXT NOT NULL",
                   "name TEXT NOT NULL", "value TEXT", "extdata JSONB NOT NULL DEFAULT '{}'"]),
    ("rocpd_pmc_event", ["event_id INTEGER", "pmc_id INTEGER NOT NULL", "value REAL DEFAULT 0.0",
                         "extdata JSONB DEFAULT '{}'"]),
    ("rocpd_region", ["nid INTEGER NOT NULL", "pid INTEGER NOT NULL", "tid INTEGER NOT NULL", "start BIGINT NOT NULL",
                      '"end" BIGINT NOT NULL', "name_id INTEGER NOT NULL", "event_id INTEGER",
                      "extdata JSONB NOT NULL DEFAULT '{}'"]),
    ("rocpd_sample", ["track_id INTEGER NOT NULL", "timestamp BIGINT NOT NULL", "event_id INTEGER",
                      "extdata JSONB NOT NULL DEFAULT '{}'"]),
    ("rocpd_kernel_dispatch", ["nid INTEGER NOT NULL", "pid INTEGER NOT NULL", "tid INTEGER",
                               "agent_id INTEGER NOT NULL", "kernel_id INTEGER NOT NULL",
                               "dispatch_id INTEGER NOT NULL", "queue_id INTEGER NOT NULL",
                               "stream_id INTEGER NOT NULL", "start BIGINT NOT NULL", '"end" BIGINT NOT NULL',
                               "private_segment_size INTEGER", "group_segment_size INTEGER",
                               "workgroup_size_x INTEGER NOT NULL", "workgroup_size_y INTEGER NOT NULL",
                               "workgroup_size_z INTEGER NOT NULL", "grid_size_x INTEGER NOT NULL",
                               "grid_size_y INTEGER NOT NULL", "grid_size_z INTEGER NOT NULL",
                               "region_name_id INTEGER", "event_id INTEGER", "extdata JSONB NOT NULL DEFAULT '{}'"]),
    ("rocpd_memory_copy", ["nid INTEGER NOT NULL", "pid INTEGER NOT NULL", "tid INTEGER", "start BIGINT NOT NULL",
                           '"end" BIGINT NOT NULL', "name_id INTEGER NOT NULL", "dst_agent_id INTEGER",
                           "dst_address INTEGER", "src_agent_id INTEGER", "src_address INTEGER",
                           "size INTEGER NOT NULL", "queue_id INTEGER", "stream_id INTEGER", "region_name_id INTEGER",
                           "event_id INTEGER", "extdata JSONB NOT NULL DEFAULT '{}'"]),
    ("rocpd_memory_allocate", ["nid INTEGER NOT NULL", "pid INTEGER NOT NULL", "tid INTEGER", "agent_id INTEGER",
                               "type TEXT", "level TEXT", "start BIGINT NOT NULL", '"end" BIGINT NOT NULL',
                               "address INTEGER", "size INTEGER NOT NULL", "queue_id INTEGER", "stream_id INTEGER",
                               "event_id INTEGER", "extdata JSONB NOT NULL DEFAULT '{}'"]),
]

# The analysis views rocprofv3 users query. They read the plain-name views, so they cover the
# set this file was written with.
_VIEWS: dict[str, str] = {
    "kernels": """
SELECT K.id, K.guid, T.tid,
       (SELECT string FROM rocpd_string WHERE id = E.category_id) AS category,
       RN.string AS region, S.display_name AS name, K.nid, P.pid,
       A.absolute_index AS agent_abs_index, A.logical_index AS agent_log_index,
       A.type_index AS agent_type_index, A.type AS agent_type, S.code_object_id,
       K.kernel_id, K.dispatch_id, K.stream_id, K.queue_id, Q.name AS queue, ST.name AS stream,
       K.start, K."end", K."end" - K.start AS duration,
       K.grid_size_x AS grid_x, K.grid_size_y AS grid_y, K.grid_size_z AS grid_z,
       K.workgroup_size_x AS workgroup_x, K.workgroup_size_y AS workgroup_y, K.workgroup_size_z AS workgroup_z,
       K.group_segment_size AS lds_size, K.private_segment_size AS scratch_size,
       S.arch_vgpr_count AS vgpr_count, S.accum_vgpr_count, S.sgpr_count,
       S.group_segment_size AS static_lds_size, S.private_segment_size AS static_scratch_size,
       E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id
FROM rocpd_kernel_dispatch K
JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id
LEFT JOIN rocpd_info_agent A ON A.id = K.agent_id
LEFT JOIN rocpd_event E ON E.id = K.event_id
LEFT JOIN rocpd_string RN ON RN.id = K.region_name_id
LEFT JOIN rocpd_info_stream ST ON ST.id = K.stream_id
LEFT JOIN rocpd_info_queue Q ON Q.id = K.queue_id
LEFT JOIN rocpd_info_process P ON P.id = K.pid
LEFT JOIN rocpd_info_thread T ON T.id = K.tid""",
    "regions": """
SELECT R.id, R.guid,
       (SELECT string FROM rocpd_string WHERE id = E.category_id) AS category,
       N.string AS name, R.nid, P.pid, T.tid, R.start, R."end", R."end" - R.start AS duration,
       R.event_id, E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id,
       E.extdata, E.call_stack, E.line_info
FROM rocpd_region R
JOIN rocpd_string N ON N.id = R.name_id
LEFT JOIN rocpd_event E ON E.id = R.event_id
LEFT JOIN rocpd_info_process P ON P.id = R.pid
LEFT JOIN rocpd_info_thread T ON T.id = R.tid""",
    "samples": """
SELECT R.id, R.guid,
       (SELECT string FROM rocpd_string WHERE id = E.category_id) AS category,
       (SELECT string FROM rocpd_string WHERE id = T.name_id) AS name,
       T.nid, P.pid, TH.tid, R.timestamp, R.event_id, E.stack_id, E.parent_stack_id,
       E.correlation_id AS corr_id, E.extdata, E.call_stack, E.line_info
FROM rocpd_sample R
JOIN rocpd_track T ON T.id = R.track_id
LEFT JOIN rocpd_event E ON E.id = R.event_id
LEFT JOIN rocpd_info_process P ON P.id = T.pid
LEFT JOIN rocpd_info_thread TH ON TH.id = T.tid""",
    "region_args": """
SELECT R.id, R.guid, R.nid, P.pid, A.type, A.name, A.value
FROM rocpd_region R
JOIN rocpd_arg A ON A.event_id = R.event_id
LEFT JOIN rocpd_info_process P ON P.id = R.pid""",
    "top_kernels": """
SELECT S.display_name AS name, COUNT(*) AS total_calls,
       SUM(K."end" - K.start) / 1000.0 AS total_duration,
       (SUM(K."end" - K.start) / COUNT(*)) / 1000.0 AS average,
       SUM(K."end" - K.start) * 100.0 / (SELECT SUM("end" - start) FROM rocpd_kernel_dispatch) AS percentage
FROM rocpd_kernel_dispatch K
JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id
GROUP BY S.display_name
ORDER BY total_duration DESC""",
    "busy": """
SELECT G.agent_id, AG.type, G.GpuTime, W.WallTime, G.GpuTime * 1.0 / W.WallTime AS Busy
FROM (SELECT agent_id, SUM("end" - start) AS GpuTime
      FROM (SELECT agent_id, start, "end" FROM rocpd_kernel_dispatch
            UNION ALL SELECT dst_agent_id, start, "end" FROM rocpd_memory_copy)
      GROUP BY agent_id) G
CROSS JOIN (SELECT MAX("end") - MIN(start) AS WallTime
            FROM (SELECT start, "end" FROM rocpd_kernel_dispatch
                  UNION ALL SELECT start, "end" FROM rocpd_memory_copy)) W
JOIN rocpd_info_agent AG ON AG.id = G.agent_id""",
}


def new_uuid() -> str:
    """A UUIDv7 (48-bit unix milliseconds, then random bits), as rocprofv3 names its table sets."""
    ms = int(time.time() * 1000) & ((1 << 48) - 1)
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms << 80) | (0x7 << 76) | ((rand >> 68) & 0xFFF) << 64 | (0b10 << 62) | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))


def table_name(base: str, guid: str) -> str:
    return f"{base}_{guid.replace('-', '_')}"


def create_statements(guid: str) -> list[str]:
    """CREATE TABLE for every rocpd table of one uuid set, then the plain-name and analysis views."""
    statements = [
        f'CREATE TABLE "{table_name("rocpd_metadata", guid)}" '
        "(id INTEGER PRIMARY KEY AUTOINCREMENT, tag TEXT NOT NULL, value TEXT NOT NULL)"
    ]
    for base, columns in _TABLES:
        body = ", ".join(
            ["id INTEGER PRIMARY KEY AUTOINCREMENT", f"guid TEXT NOT NULL DEFAULT '{guid}'", *columns]
        )
        statements.append(f'CREATE TABLE "{table_name(base, guid)}" ({body})')
    for base in ["rocpd_metadata", *(b for b, _ in _TABLES)]:
        statements.append(f'CREATE VIEW "{base}" AS SELECT * FROM "{table_name(base, guid)}"')
    for name, body in _VIEWS.items():
        statements.append(f'CREATE VIEW "{name}" AS {body.strip()}')
    return statements


def table_columns(base: str) -> list[str]:
    """Column names (after id and guid) of one table, for INSERT statements."""
    for name, columns in _TABLES:
        if name == base:
            return [c.split()[0].strip('"') for c in columns]
    raise KeyError(base)
