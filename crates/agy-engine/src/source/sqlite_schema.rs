//! The schema check of a conversation database: agy's seven tables and
//! their indexes (public-format-facts §1.2), compared as SQLite reports
//! their structure, never as the DDL's text (older agy builds spell the
//! same tables differently: unquoted or otherwise quoted names, upper-case
//! types, an inline `PRIMARY KEY`, other spacing).
//!
//! What is compared, each difference a `schema-drift` refusal naming the
//! table, column or index and what differs:
//!
//! * the objects of `sqlite_master`: exactly the seven tables, the two
//!   explicit indexes and the two automatic indexes of the text primary keys
//!   (`sqlite_autoindex_trajectory_meta_1`,
//!   `sqlite_autoindex_trajectory_metadata_blob_1`); no view, trigger or
//!   other object;
//! * each table (`PRAGMA table_list`): an ordinary table (not virtual), not
//!   `WITHOUT ROWID`, not `STRICT`;
//! * each table's columns (`PRAGMA table_xinfo`, which unlike `table_info`
//!   lists hidden and generated columns): the same columns in the same order,
//!   none hidden or generated (column 6: 1 hidden virtual-table column, 2
//!   generated VIRTUAL, 3 generated STORED), each with agy's declared type
//!   (ASCII case ignored: SQLite itself reports `text` as `TEXT`), NOT NULL,
//!   default text (exactly: `"main"` is not `'main'`) and primary-key
//!   position;
//! * each column's collation and AUTOINCREMENT
//!   (`sqlite3_table_column_metadata`): the default `BINARY`, none;
//! * each table's foreign keys (`PRAGMA foreign_key_list`): none;
//! * each table's other clauses (CHECK constraints, which no pragma reports,
//!   constraint names, conflict clauses, table options): none but agy's,
//!   read from the statement's text by [`super::sql_ddl`] (see there why
//!   that reading is reliable, and what it accepts);
//! * each table's indexes (`PRAGMA index_list`): exactly agy's, each with
//!   agy's uniqueness, origin (`c` created by CREATE INDEX, `pk` the primary
//!   key's) and not partial;
//! * each index's keys (`PRAGMA index_xinfo`, the rowid column included):
//!   agy's one column, ascending, `BINARY`, then the rowid; no expression
//!   (cid -2), no other column, no DESC, no other collation.
//!
//! Stricter than §1.2's wording where it is silent: the renderings it calls
//! older "drop the NOT NULL/DEFAULT clauses"; whether any agy build wrote
//! such tables "could not be established" (§1.2), and a table without them
//! has another structure (SQLite reports NOT NULL and the default), so it
//! stays refused, as it was before this comparison.

use super::sql_ddl;
use crate::verdict::{ReasonClass, Refusal};
use rusqlite::types::ValueRef;
use rusqlite::Connection;

/// Expected columns: (name, declared type, NOT NULL, default text, primary-key position).
type Col = (&'static str, &'static str, bool, Option<&'static str>, i64);

/// The seven tables of public-format-facts §1.2, in that order.
pub const TABLES: &[(&str, &[Col])] = &[
    (
        "trajectory_meta",
        &[
            ("trajectory_id", "text", false, None, 1),
            ("cascade_id", "text", false, None, 0),
            ("trajectory_type", "integer", false, None, 0),
            ("source", "integer", false, None, 0),
        ],
    ),
    (
        "steps",
        &[
            ("idx", "integer", false, None, 1),
            ("step_type", "integer", true, Some("0"), 0),
            ("status", "integer", true, Some("0"), 0),
            ("has_subtrajectory", "numeric", true, Some("false"), 0),
            ("metadata", "blob", false, None, 0),
            ("error_details", "blob", false, None, 0),
            ("permissions", "blob", false, None, 0),
            ("task_details", "blob", false, None, 0),
            ("render_info", "blob", false, None, 0),
            ("step_payload", "blob", false, None, 0),
            ("step_format", "integer", true, Some("0"), 0),
        ],
    ),
    (
        "gen_metadata",
        &[
            ("idx", "integer", false, None, 1),
            ("data", "blob", false, None, 0),
            ("size", "integer", true, Some("0"), 0),
        ],
    ),
    (
        "executor_metadata",
        &[
            ("idx", "integer", false, None, 1),
            ("data", "blob", false, None, 0),
        ],
    ),
    (
        "parent_references",
        &[
            ("idx", "integer", false, None, 1),
            ("data", "blob", false, None, 0),
        ],
    ),
    (
        "trajectory_metadata_blob",
        &[
            ("id", "text", false, Some("\"main\""), 1),
            ("data", "blob", false, None, 0),
        ],
    ),
    (
        "battle_mode_infos",
        &[
            ("idx", "integer", false, None, 1),
            ("data", "blob", false, None, 0),
        ],
    ),
];

/// Every index agy's tables have: (name, table, its one column, unique,
/// origin). The two explicit ones, then the automatic indexes SQLite makes
/// for the two text primary keys (an `integer` key is the rowid itself).
pub const INDEXES: &[(&str, &str, &str, bool, &str)] = &[
    ("idx_steps_status", "steps", "status", false, "c"),
    ("idx_steps_step_type", "steps", "step_type", false, "c"),
    (
        "sqlite_autoindex_trajectory_meta_1",
        "trajectory_meta",
        "trajectory_id",
        true,
        "pk",
    ),
    (
        "sqlite_autoindex_trajectory_metadata_blob_1",
        "trajectory_metadata_blob",
        "id",
        true,
        "pk",
    ),
];

fn drift(refusals: &mut Vec<Refusal>, location: impl Into<String>, detail: impl Into<String>) {
    refusals.push(Refusal::new(ReasonClass::SchemaDrift, location, detail));
}

/// A schema as `sqlite_master` states it: each object's type, name, table
/// and exact SQL text (a value that is not text kept with its storage class).
type SchemaText = Vec<(String, String, String, Option<(u8, Vec<u8>)>)>;

/// What SQLite parses a schema from: its text and the database's schema
/// format number (header bytes 44-47; below 4 SQLite ignores DESC in an
/// index).
type SchemaKey = (SchemaText, u32);

/// Schemas checked, with the refusals each got.
type SchemaMemo = std::sync::Mutex<Vec<(SchemaKey, Vec<Refusal>)>>;

/// How many schemas [`check_schema`] remembers (a store holds one or two).
const SCHEMA_MEMO: usize = 16;

/// [`check_schema_full`]'s answer for a schema already checked in this
/// process, else that check, remembered when it ran to its end.
///
/// Everything the full check reads (the object list, and each table's and
/// index's pragmas and column metadata) is what SQLite parsed from
/// `sqlite_master`'s SQL text under the database's schema format number, and
/// the clauses it reads are that text: two databases that agree in every
/// object's type, name, table and SQL text and in that number get the same
/// refusals, so the memo is keyed by exactly those. `schema_format` is
/// `None` when the caller cannot tell the number (a snapshot replayed by
/// SQLite on disk): the check then runs and is not remembered. A check that
/// failed with an error is not remembered either (it runs again, and fails
/// again, on the next such schema).
pub fn check_schema(
    conn: &Connection,
    schema_format: Option<u32>,
    refusals: &mut Vec<Refusal>,
) -> rusqlite::Result<()> {
    use std::sync::{Mutex, OnceLock};
    static MEMO: OnceLock<SchemaMemo> = OnceLock::new();
    let mut st =
        conn.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")?;
    let text: SchemaText = st
        .query_map([], |r| {
            let sql = match r.get_ref(3)? {
                ValueRef::Null => None,
                ValueRef::Text(t) => Some((0, t.to_vec())),
                ValueRef::Blob(b) => Some((1, b.to_vec())),
                ValueRef::Integer(i) => Some((2, i.to_le_bytes().to_vec())),
                ValueRef::Real(f) => Some((3, f.to_le_bytes().to_vec())),
            };
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, sql))
        })?
        .collect::<rusqlite::Result<_>>()?;
    drop(st);
    let objects: Vec<Object> = text
        .iter()
        .map(|(kind, name, table, sql)| Object {
            kind: kind.clone(),
            name: name.clone(),
            table: table.clone(),
            sql: match sql {
                Some((0, t)) => std::str::from_utf8(t).ok().map(str::to_string),
                _ => None,
            },
        })
        .collect();
    let Some(format) = schema_format else {
        return check_schema_full(conn, &objects, refusals);
    };
    let key = (text, format);
    let memo = MEMO.get_or_init(|| Mutex::new(Vec::new()));
    // A poisoned lock only means another thread panicked while pushing; the
    // list is consistent either way.
    let known = {
        let memo = memo.lock().unwrap_or_else(|p| p.into_inner());
        memo.iter()
            .find(|(k, _)| *k == key)
            .map(|(_, found)| found.clone())
    };
    if let Some(found) = known {
        refusals.extend(found);
        return Ok(());
    }
    let mut found = Vec::new();
    check_schema_full(conn, &objects, &mut found)?;
    {
        let mut memo = memo.lock().unwrap_or_else(|p| p.into_inner());
        if memo.len() >= SCHEMA_MEMO {
            memo.remove(0);
        }
        memo.push((key, found.clone()));
    }
    refusals.extend(found);
    Ok(())
}

/// One object of `sqlite_master`.
struct Object {
    kind: String,
    name: String,
    table: String,
    /// Its SQL, when that is text.
    sql: Option<String>,
}

/// The schema check itself: every object of `sqlite_master` known, every
/// table's and index's structure as agy writes it (see the module
/// documentation).
fn check_schema_full(
    conn: &Connection,
    objects: &[Object],
    refusals: &mut Vec<Refusal>,
) -> rusqlite::Result<()> {
    for o in objects {
        let known = match o.kind.as_str() {
            "table" => TABLES.iter().any(|(t, _)| *t == o.name),
            "index" => INDEXES
                .iter()
                .any(|(i, t, ..)| *i == o.name && *t == o.table),
            _ => false,
        };
        if !known {
            drift(
                refusals,
                format!("sqlite_master {} `{}`", o.kind, o.name),
                format!("unexpected {} `{}` on `{}`", o.kind, o.name, o.table),
            );
        }
    }
    for (table, cols) in TABLES {
        let Some(o) = objects
            .iter()
            .find(|o| o.kind == "table" && o.name == *table)
        else {
            drift(refusals, format!("table `{table}`"), "missing table");
            continue;
        };
        check_table(conn, table, cols, refusals)?;
        check_clauses(table, o.sql.as_deref(), refusals);
        check_indexes(conn, table, objects, refusals)?;
    }
    Ok(())
}

/// The hidden-column kinds of `PRAGMA table_xinfo`'s column 6.
fn hidden_kind(hidden: i64) -> String {
    match hidden {
        1 => "a hidden (virtual-table) column".into(),
        2 => "a generated VIRTUAL column".into(),
        3 => "a generated STORED column".into(),
        n => format!("a hidden column of kind {n}"),
    }
}

/// One row of `PRAGMA table_xinfo`.
struct ColumnInfo {
    name: String,
    ty: String,
    not_null: bool,
    default: Option<String>,
    pk: i64,
    hidden: i64,
}

/// `table`'s kind, options, columns, collations and foreign keys as SQLite
/// reports them, against `cols`.
fn check_table(
    conn: &Connection,
    table: &str,
    cols: &[Col],
    refusals: &mut Vec<Refusal>,
) -> rusqlite::Result<()> {
    let at = format!("table `{table}`");
    let mut st = conn.prepare(&format!("PRAGMA main.table_list(`{table}`)"))?;
    let kinds: Vec<(String, bool, bool)> = st
        .query_map([], |r| {
            Ok((
                r.get(2)?,
                r.get::<_, i64>(4)? != 0,
                r.get::<_, i64>(5)? != 0,
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    for (kind, without_rowid, strict) in &kinds {
        if kind != "table" {
            drift(
                refusals,
                &at,
                format!("a {kind} table, not an ordinary one"),
            );
        }
        if *without_rowid {
            drift(refusals, &at, "a WITHOUT ROWID table: agy's have rowids");
        }
        if *strict {
            drift(refusals, &at, "a STRICT table: agy's are not");
        }
    }
    if kinds.iter().any(|(k, ..)| k != "table") {
        // A virtual table's columns are its module's, not declarations.
        return Ok(());
    }
    let mut st = conn.prepare(&format!("PRAGMA main.table_xinfo(`{table}`)"))?;
    let found: Vec<ColumnInfo> = st
        .query_map([], |r| {
            Ok(ColumnInfo {
                name: r.get(1)?,
                ty: r.get(2)?,
                not_null: r.get::<_, i64>(3)? != 0,
                default: r.get(4)?,
                pk: r.get(5)?,
                hidden: r.get(6)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    for c in found.iter().filter(|c| c.hidden != 0) {
        drift(
            refusals,
            format!("table `{table}` column `{}`", c.name),
            format!(
                "{}: agy declares only ordinary columns",
                hidden_kind(c.hidden)
            ),
        );
    }
    if found.len() != cols.len() {
        drift(
            refusals,
            &at,
            format!("{} columns, not the {} agy writes", found.len(), cols.len()),
        );
        return Ok(());
    }
    for (c, (en, et, enn, ed, epk)) in found.iter().zip(cols.iter()) {
        let ColumnInfo {
            name,
            ty,
            not_null: nn,
            default: dflt,
            pk,
            hidden: _,
        } = c;
        if name != en
            || !ty.eq_ignore_ascii_case(et)
            || nn != enn
            || dflt.as_deref() != *ed
            || pk != epk
        {
            drift(
                refusals,
                format!("table `{table}` column `{name}`"),
                format!(
                    "declared `{name} {ty}` (not null {nn}, default {dflt:?}, pk {pk}), expected `{en} {et}` (not null {enn}, default {ed:?}, pk {epk})"
                ),
            );
            continue;
        }
        let (_, collation, _, _, autoinc) = conn.column_metadata(Some("main"), table, en)?;
        let collation = collation.map(|c| c.to_string_lossy().into_owned());
        if !collation
            .as_deref()
            .is_some_and(|c| c.eq_ignore_ascii_case("BINARY"))
        {
            drift(
                refusals,
                format!("table `{table}` column `{name}`"),
                format!(
                    "collation {}, not the default BINARY agy's columns use",
                    collation.as_deref().unwrap_or("(none)")
                ),
            );
        }
        if autoinc {
            drift(
                refusals,
                format!("table `{table}` column `{name}`"),
                "AUTOINCREMENT: agy's keys are plain",
            );
        }
    }
    let mut st = conn.prepare(&format!("PRAGMA main.foreign_key_list(`{table}`)"))?;
    let keys: Vec<(String, String)> = st
        .query_map([], |r| Ok((r.get(3)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (from, to) in keys {
        drift(
            refusals,
            format!("table `{table}` column `{from}`"),
            format!("a foreign key to `{to}`: agy declares none"),
        );
    }
    Ok(())
}

/// `table`'s clauses, read from its statement `sql` ([`sql_ddl`]).
fn check_clauses(table: &str, sql: Option<&str>, refusals: &mut Vec<Refusal>) {
    let Some(sql) = sql else {
        drift(
            refusals,
            format!("table `{table}`"),
            "its sqlite_master SQL is not text",
        );
        return;
    };
    for d in sql_ddl::table_defects(sql) {
        let location = match &d.column {
            Some(c) => format!("table `{table}` column `{c}`"),
            None => format!("table `{table}`"),
        };
        drift(refusals, location, d.defect.to_string());
    }
}

/// One row of `PRAGMA index_xinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct KeyColumn {
    /// The table column (-1 the rowid, -2 an expression).
    cid: i64,
    name: Option<String>,
    desc: bool,
    /// The collation, upper-cased (SQLite's names ignore ASCII case).
    collation: String,
    /// A key column (not an auxiliary one).
    key: bool,
}

impl std::fmt::Display for KeyColumn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.cid, &self.name) {
            (-1, _) => f.write_str("rowid")?,
            (-2, _) => f.write_str("an expression")?,
            (_, Some(n)) => write!(f, "`{n}`")?,
            (cid, None) => write!(f, "column {cid}")?,
        }
        if self.desc {
            f.write_str(" DESC")?;
        }
        if self.collation != "BINARY" {
            write!(f, " COLLATE {}", self.collation)?;
        }
        if !self.key && self.cid != -1 {
            f.write_str(" (auxiliary)")?;
        }
        Ok(())
    }
}

fn keys_shown(keys: &[KeyColumn]) -> String {
    let words: Vec<String> = keys.iter().map(KeyColumn::to_string).collect();
    format!("({})", words.join(", "))
}

/// `table`'s indexes (`PRAGMA index_list`) and each one's keys (`PRAGMA
/// index_xinfo`) against [`INDEXES`].
fn check_indexes(
    conn: &Connection,
    table: &str,
    objects: &[Object],
    refusals: &mut Vec<Refusal>,
) -> rusqlite::Result<()> {
    let mut st = conn.prepare(&format!("PRAGMA main.index_list(`{table}`)"))?;
    let listed: Vec<(String, bool, String, bool)> = st
        .query_map([], |r| {
            Ok((
                r.get(1)?,
                r.get::<_, i64>(2)? != 0,
                r.get(3)?,
                r.get::<_, i64>(4)? != 0,
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let expected: Vec<_> = INDEXES.iter().filter(|(_, t, ..)| *t == table).collect();
    for (name, unique, origin, partial) in &listed {
        let at = format!("index `{name}`");
        let Some((_, _, column, eu, eo)) = expected.iter().find(|(n, ..)| n == name) else {
            // A named one is already refused as an unexpected object.
            if !objects.iter().any(|o| o.kind == "index" && o.name == *name) {
                drift(
                    refusals,
                    &at,
                    format!("an index on `{table}` (origin {origin}) agy's tables do not have"),
                );
            }
            continue;
        };
        if unique != eu {
            drift(
                refusals,
                &at,
                if *unique {
                    "UNIQUE: agy's index is not"
                } else {
                    "not UNIQUE, as agy's is"
                },
            );
        }
        if origin != eo {
            drift(refusals, &at, format!("origin {origin}, not agy's {eo}"));
        }
        if *partial {
            drift(
                refusals,
                &at,
                "a partial index (WHERE …): agy's covers every row",
            );
        }
        let mut st = conn.prepare(&format!("PRAGMA main.index_xinfo(`{name}`)"))?;
        let keys: Vec<KeyColumn> = st
            .query_map([], |r| {
                Ok(KeyColumn {
                    cid: r.get(1)?,
                    name: r.get(2)?,
                    desc: r.get::<_, i64>(3)? != 0,
                    collation: r
                        .get::<_, Option<String>>(4)?
                        .unwrap_or_default()
                        .to_ascii_uppercase(),
                    key: r.get::<_, i64>(5)? != 0,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        let cid = TABLES
            .iter()
            .find(|(t, _)| *t == table)
            .and_then(|(_, cols)| cols.iter().position(|c| c.0 == *column))
            .map_or(-3, |p| p as i64);
        let want = [
            KeyColumn {
                cid,
                name: Some(column.to_string()),
                desc: false,
                collation: "BINARY".into(),
                key: true,
            },
            KeyColumn {
                cid: -1,
                name: None,
                desc: false,
                collation: "BINARY".into(),
                key: false,
            },
        ];
        if keys != want {
            drift(
                refusals,
                &at,
                format!(
                    "keys {}, not agy's {}",
                    keys_shown(&keys),
                    keys_shown(&want)
                ),
            );
        }
    }
    for (name, ..) in expected {
        if !listed.iter().any(|(n, ..)| n == name) {
            drift(refusals, format!("index `{name}`"), "missing index");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// agy's nine statements, verbatim (public-format-facts §1.2).
    const DDL: &[&str] = &[
        "CREATE TABLE `trajectory_meta` (`trajectory_id` text,`cascade_id` text,`trajectory_type` integer,`source` integer,PRIMARY KEY (`trajectory_id`))",
        "CREATE TABLE `steps` (`idx` integer,`step_type` integer NOT NULL DEFAULT 0,`status` integer NOT NULL DEFAULT 0,`has_subtrajectory` numeric NOT NULL DEFAULT false,`metadata` blob,`error_details` blob,`permissions` blob,`task_details` blob,`render_info` blob,`step_payload` blob,`step_format` integer NOT NULL DEFAULT 0,PRIMARY KEY (`idx`))",
        "CREATE INDEX `idx_steps_status` ON `steps`(`status`)",
        "CREATE INDEX `idx_steps_step_type` ON `steps`(`step_type`)",
        "CREATE TABLE `gen_metadata` (`idx` integer,`data` blob,`size` integer NOT NULL DEFAULT 0,PRIMARY KEY (`idx`))",
        "CREATE TABLE `executor_metadata` (`idx` integer,`data` blob,PRIMARY KEY (`idx`))",
        "CREATE TABLE `parent_references` (`idx` integer,`data` blob,PRIMARY KEY (`idx`))",
        "CREATE TABLE `trajectory_metadata_blob` (`id` text DEFAULT \"main\",`data` blob,PRIMARY KEY (`id`))",
        "CREATE TABLE `battle_mode_infos` (`idx` integer,`data` blob,PRIMARY KEY (`idx`))",
    ];

    /// An in-memory database with agy's DDL, `edit` applied to each
    /// statement; `legacy`: created in schema format 1.
    fn db(edit: impl Fn(&str) -> String, legacy: bool) -> Connection {
        let c = Connection::open_in_memory().unwrap();
        c.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_LEGACY_FILE_FORMAT,
            legacy,
        )
        .unwrap();
        for s in DDL {
            c.execute_batch(&edit(s)).unwrap();
        }
        c
    }

    fn full(c: &Connection) -> Vec<Refusal> {
        let mut out = Vec::new();
        check_schema(c, None, &mut out).unwrap();
        out
    }

    #[test]
    fn agys_schema_has_no_refusal() {
        assert_eq!(full(&db(str::to_string, false)), vec![]);
    }

    /// An index agy does not write is an unexpected object, on a table that
    /// has agy's indexes as on one that has none: an index is known by its
    /// name and its table together.
    #[test]
    fn an_extra_index_is_refused() {
        for (sql, name) in [
            ("CREATE INDEX `idx_extra` ON `steps`(`idx`)", "idx_extra"),
            (
                "CREATE INDEX `idx_gen` ON `gen_metadata`(`size`)",
                "idx_gen",
            ),
        ] {
            let c = db(str::to_string, false);
            c.execute_batch(sql).unwrap();
            let refused = full(&c);
            assert!(
                refused
                    .iter()
                    .any(|r| r.location == format!("sqlite_master index `{name}`")),
                "{refused:?}"
            );
        }
    }

    /// An index SQLite keeps but `sqlite_master` does not list (a WITHOUT
    /// ROWID table's key) is refused by the index check itself; an extra
    /// index that is listed is refused once, as an unexpected object.
    #[test]
    fn an_index_only_sqlite_lists_is_refused_and_a_listed_one_once() {
        let c = db(
            |s| {
                if s.contains("TABLE `executor_metadata`") {
                    format!("{s} WITHOUT ROWID")
                } else {
                    s.to_string()
                }
            },
            false,
        );
        let refused = full(&c);
        assert!(
            refused
                .iter()
                .any(|r| r.location == "index `sqlite_autoindex_executor_metadata_1`"),
            "{refused:?}"
        );
        let c = db(str::to_string, false);
        c.execute_batch("CREATE INDEX `idx_extra` ON `steps`(`idx`)")
            .unwrap();
        let refused = full(&c);
        assert_eq!(
            refused
                .iter()
                .filter(|r| r.location.contains("idx_extra"))
                .count(),
            1,
            "{refused:?}"
        );
    }

    /// Each part of a column's declaration as SQLite reports it is compared
    /// on its own: a NOT NULL dropped, another DEFAULT, another place in the
    /// primary key.
    #[test]
    fn each_part_of_a_column_declaration_is_compared() {
        for (table, from, to, column) in [
            (
                "steps",
                "`step_type` integer NOT NULL DEFAULT 0",
                "`step_type` integer DEFAULT 0",
                "step_type",
            ),
            (
                "gen_metadata",
                "`size` integer NOT NULL DEFAULT 0",
                "`size` integer NOT NULL DEFAULT 1",
                "size",
            ),
            (
                "executor_metadata",
                "PRIMARY KEY (`idx`))",
                "PRIMARY KEY (`idx`,`data`))",
                "data",
            ),
        ] {
            let c = db(
                |s| {
                    if s.contains(&format!("TABLE `{table}`")) {
                        s.replace(from, to)
                    } else {
                        s.to_string()
                    }
                },
                false,
            );
            let cols = TABLES.iter().find(|(t, _)| *t == table).unwrap().1;
            let mut out = Vec::new();
            check_table(&c, table, cols, &mut out).unwrap();
            assert!(
                out.iter().any(
                    |r| r.location == format!("table `{table}` column `{column}`")
                        && r.detail.starts_with("declared")
                ),
                "{table}: {out:?}"
            );
        }
    }

    /// The collation is SQLite's answer (column metadata), not only a
    /// clause the text reader refuses.
    #[test]
    fn a_collation_is_read_from_sqlite() {
        let c = db(
            |s| s.replace("`cascade_id` text,", "`cascade_id` text COLLATE NOCASE,"),
            false,
        );
        let mut out = Vec::new();
        check_table(&c, "trajectory_meta", TABLES[0].1, &mut out).unwrap();
        assert_eq!(
            out,
            vec![Refusal::new(
                ReasonClass::SchemaDrift,
                "table `trajectory_meta` column `cascade_id`",
                "collation NOCASE, not the default BINARY agy's columns use"
            )]
        );
    }

    /// The memo is keyed by the schema format number too: below 4 SQLite
    /// ignores an index's DESC, so the same text is agy's index in one
    /// database and a descending one in another.
    #[test]
    fn the_remembered_check_is_keyed_by_the_schema_format() {
        // A text no other test uses, so no other test's memo entry answers.
        let desc = |s: &str| {
            s.replace(
                "ON `steps`(`status`)",
                "ON `steps`(`status` DESC /* memo */)",
            )
        };
        let (old, new) = (db(desc, true), db(desc, false));
        assert_eq!(full(&old), vec![], "DESC ignored in format 1");
        let refused = full(&new);
        assert!(
            refused.iter().any(|r| r.detail.contains("`status` DESC")),
            "{refused:?}"
        );
        let remembered = |c: &Connection, format| {
            let mut out = Vec::new();
            check_schema(c, Some(format), &mut out).unwrap();
            out
        };
        assert_eq!(remembered(&old, 1), vec![]);
        assert_eq!(remembered(&new, 4), refused);
        assert_eq!(remembered(&old, 1), vec![]);
    }
}
