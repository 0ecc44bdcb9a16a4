//! The clauses of a `CREATE TABLE` statement, read from its text as SQLite
//! tokenizes it: the one part of a table's structure no pragma reports.
//!
//! SQLite has no pragma for CHECK constraints, constraint names, conflict
//! clauses, `ASC`/`DESC` on a primary key, or table options. It does parse
//! every table from the exact text `sqlite_master` keeps (that text is what
//! it re-reads on each open, and `ALTER TABLE` rewrites it), so reading the
//! same text with SQLite's own token rules sees every clause SQLite sees.
//!
//! The reading is an allow-list, not a search for bad words: a statement is
//! accepted only as `CREATE TABLE name ( element, ... )` with nothing after
//! the closing parenthesis, where each element is
//!
//! * a column: its name, its type as bare words, then only the clauses agy's
//!   DDL and its older renderings use (public-format-facts §1.2): `NOT NULL`,
//!   `DEFAULT` with a single literal token, and an inline `PRIMARY KEY` (the
//!   older spelling of the key) with nothing after it (`ASC`/`DESC`, `ON
//!   CONFLICT`, `AUTOINCREMENT` refused);
//! * the table constraint `PRIMARY KEY ( column )`, one column, nothing else.
//!
//! Anything else is a [`DdlDefect`]: a CHECK (column or table), a COLLATE, a
//! generated column (`GENERATED ALWAYS AS` / `AS`), UNIQUE, REFERENCES /
//! FOREIGN KEY, a named CONSTRAINT, a NULL clause, a parenthesised type size,
//! `WITHOUT ROWID` / `STRICT` or any other word after the list, and any token
//! this reader does not place. That is stricter than the structure alone
//! (`COLLATE BINARY` or `CONSTRAINT pk PRIMARY KEY (idx)` change nothing
//! SQLite reports, yet are refused): no agy spelling has them, and a clause
//! not understood here must not pass unseen. What the accepted clauses say
//! (which columns, their types, NOT NULL, default text, key position) is
//! compared separately with what SQLite reports (`PRAGMA table_xinfo`), so
//! this module only decides which clauses may appear at all.
//!
//! Tokens follow SQLite's `tokenize.c`: whitespace (space, tab, newline,
//! form feed, carriage return), `--` comments to the end of the line, `/* */`
//! comments (an unterminated one runs to the end), `'strings'` with `''`,
//! `"identifiers"` with `""`, `` `identifiers` `` with ``` `` ```,
//! `[identifiers]` up to the first `]`, `x'…'` blobs, bare words of ASCII
//! letters, digits, `_`, `$` and every byte from 0x80, numbers. A character
//! SQLite would not accept where it stands (a vertical tab, a variable, an
//! unterminated quote) is an `Other` token, refused wherever it appears.

use thiserror::Error;

/// One token of SQL text.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// A bare word (keyword or identifier), as written.
    Word(String),
    /// A quoted identifier (`"…"`, `` `…` ``, `[…]`), unquoted.
    Quoted(String),
    /// A `'string'` literal, unquoted.
    Str(String),
    /// A number literal, as written.
    Number(String),
    /// A blob literal `x'…'`, as written.
    Blob(String),
    /// One punctuation character: `(`, `)`, `,`, `;`, `.`, `-`, `+`, ….
    Punct(char),
    /// Text this reader does not place (refused wherever it stands).
    Other(String),
}

impl Token {
    /// A bare word equal to `kw`, ignoring ASCII case (SQLite's keywords).
    fn is(&self, kw: &str) -> bool {
        matches!(self, Token::Word(w) if w.eq_ignore_ascii_case(kw))
    }

    /// An identifier, bare or quoted: its name.
    fn ident(&self) -> Option<&str> {
        match self {
            Token::Word(w) | Token::Quoted(w) => Some(w),
            _ => None,
        }
    }

    /// The token as it reads in a message.
    fn shown(&self) -> String {
        match self {
            Token::Word(w) | Token::Number(w) | Token::Blob(w) | Token::Other(w) => w.clone(),
            Token::Quoted(w) => format!("\"{w}\""),
            Token::Str(s) => format!("'{s}'"),
            Token::Punct(c) => c.to_string(),
        }
    }
}

/// A clause of a `CREATE TABLE` statement agy's DDL does not have.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DdlDefect {
    /// Not `CREATE TABLE name (`: a virtual table, `CREATE TABLE … AS
    /// SELECT`, a schema-qualified name, or text that is no statement.
    #[error("the statement is not `CREATE TABLE name (…)` (found `{0}`)")]
    NotCreateTable(String),
    /// The column list never closes.
    #[error("the column list is not closed")]
    Unclosed,
    /// Anything after the column list (`WITHOUT ROWID`, `STRICT`, …).
    #[error(
        "`{0}` after the column list: agy's tables have no table options (WITHOUT ROWID, STRICT)"
    )]
    TableOption(String),
    /// A CHECK constraint (on a column or the table).
    #[error("a CHECK constraint: agy declares none")]
    Check,
    /// A COLLATE clause.
    #[error("a COLLATE clause: agy's columns use the default collation")]
    Collate,
    /// A generated column (`GENERATED ALWAYS AS (…)` or `AS (…)`).
    #[error("a generated column (GENERATED ALWAYS AS / AS): agy declares none")]
    Generated,
    /// A UNIQUE constraint (on a column or the table).
    #[error("a UNIQUE constraint: agy declares none")]
    Unique,
    /// A foreign key (`REFERENCES` or `FOREIGN KEY`).
    #[error("a foreign key: agy declares none")]
    ForeignKey,
    /// A named constraint (`CONSTRAINT name …`).
    #[error("a named constraint (CONSTRAINT …): agy names none")]
    NamedConstraint,
    /// A primary key with more than agy's bare form (`ASC`/`DESC`, a
    /// conflict clause, `AUTOINCREMENT`, several columns).
    #[error("PRIMARY KEY followed by `{0}`: agy's key is a bare PRIMARY KEY")]
    PrimaryKeyClause(String),
    /// A NOT NULL with a conflict clause, or a bare NULL clause.
    #[error("`{0}`: agy's NOT NULL has no conflict clause and no column says NULL")]
    NullClause(String),
    /// A DEFAULT that is not a single literal token.
    #[error("DEFAULT `{0}`: agy's defaults are a single literal")]
    DefaultForm(String),
    /// A type with a size or another non-word part (`text(10)`).
    #[error("declared type followed by `{0}`: agy's types are bare words")]
    TypeForm(String),
    /// A column without a name, or a token this reader does not place.
    #[error("unexpected `{0}`")]
    Unexpected(String),
}

/// A defect and the column it belongs to (`None`: the table's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Defect {
    pub column: Option<String>,
    pub defect: DdlDefect,
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// `sql` as SQLite tokenizes it, without whitespace and comments.
fn tokens(sql: &str) -> Vec<Token> {
    let b = sql.as_bytes();
    let text = |from: usize, to: usize| String::from_utf8_lossy(&b[from..to]).into_owned();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\n' | b'\x0c' | b'\r' => i += 1,
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i = (i + 2).min(b.len());
            }
            b'\'' | b'"' | b'`' => {
                // Closed by the same quote not followed by another one; a
                // doubled quote stands for one.
                let mut j = i + 1;
                let mut value = Vec::new();
                let closed = loop {
                    match b.get(j) {
                        None => break false,
                        Some(&q) if q == c && b.get(j + 1) == Some(&c) => {
                            value.push(c);
                            j += 2;
                        }
                        Some(&q) if q == c => break true,
                        Some(&o) => {
                            value.push(o);
                            j += 1;
                        }
                    }
                };
                if !closed {
                    out.push(Token::Other(text(i, b.len())));
                    break;
                }
                let value = String::from_utf8_lossy(&value).into_owned();
                out.push(if c == b'\'' {
                    Token::Str(value)
                } else {
                    Token::Quoted(value)
                });
                i = j + 1;
            }
            b'[' => match b[i + 1..].iter().position(|&x| x == b']') {
                Some(n) => {
                    out.push(Token::Quoted(text(i + 1, i + 1 + n)));
                    i += n + 2;
                }
                None => {
                    out.push(Token::Other(text(i, b.len())));
                    break;
                }
            },
            b'x' | b'X' if b.get(i + 1) == Some(&b'\'') => {
                match b[i + 2..].iter().position(|&x| x == b'\'') {
                    Some(n) => {
                        out.push(Token::Blob(text(i, i + 3 + n)));
                        i += n + 3;
                    }
                    None => {
                        out.push(Token::Other(text(i, b.len())));
                        break;
                    }
                }
            }
            b'0'..=b'9' => {
                let start = i;
                while i < b.len() {
                    let d = b[i];
                    let sign = (d == b'+' || d == b'-') && matches!(b[i - 1], b'e' | b'E');
                    if is_word_byte(d) || d == b'.' || sign {
                        i += 1;
                    } else {
                        break;
                    }
                }
                out.push(Token::Number(text(start, i)));
            }
            b'.' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                let start = i;
                i += 1;
                while i < b.len() && (is_word_byte(b[i]) || b[i] == b'.') {
                    i += 1;
                }
                out.push(Token::Number(text(start, i)));
            }
            _ if is_word_byte(c) && c != b'$' => {
                let start = i;
                while i < b.len() && is_word_byte(b[i]) {
                    i += 1;
                }
                out.push(Token::Word(text(start, i)));
            }
            b'(' | b')' | b',' | b';' | b'.' | b'-' | b'+' | b'*' | b'/' | b'%' | b'=' | b'<'
            | b'>' | b'!' | b'|' | b'~' | b'&' => {
                out.push(Token::Punct(c as char));
                i += 1;
            }
            _ => {
                // A variable (`?`, `:`, `@`, `#`, `$`), a vertical tab, a
                // control byte: nothing agy writes. One UTF-8 character.
                let start = i;
                i += 1;
                while i < b.len() && (b[i] & 0xc0) == 0x80 {
                    i += 1;
                }
                out.push(Token::Other(text(start, i)));
            }
        }
    }
    out
}

/// The elements of a column list: the tokens between commas at depth one.
fn elements(list: &[Token]) -> Vec<&[Token]> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, t) in list.iter().enumerate() {
        match t {
            Token::Punct('(') => depth += 1,
            Token::Punct(')') => depth = depth.saturating_sub(1),
            Token::Punct(',') if depth == 0 => {
                out.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&list[start..]);
    out
}

/// Words that end a column's type and begin a constraint.
const CONSTRAINT_WORDS: &[&str] = &[
    "CONSTRAINT",
    "PRIMARY",
    "NOT",
    "NULL",
    "UNIQUE",
    "CHECK",
    "DEFAULT",
    "COLLATE",
    "REFERENCES",
    "GENERATED",
    "AS",
];

/// The defect a constraint word that agy's DDL never has stands for.
fn foreign_clause(t: &Token) -> DdlDefect {
    let named = [
        ("CHECK", DdlDefect::Check),
        ("COLLATE", DdlDefect::Collate),
        ("GENERATED", DdlDefect::Generated),
        ("AS", DdlDefect::Generated),
        ("UNIQUE", DdlDefect::Unique),
        ("REFERENCES", DdlDefect::ForeignKey),
        ("FOREIGN", DdlDefect::ForeignKey),
        ("CONSTRAINT", DdlDefect::NamedConstraint),
        ("NULL", DdlDefect::NullClause("NULL".into())),
    ];
    named
        .into_iter()
        .find(|(w, _)| t.is(w))
        .map_or_else(|| DdlDefect::Unexpected(t.shown()), |(_, d)| d)
}

/// The column definition `def`'s defect, if any.
fn column(def: &[Token]) -> Option<DdlDefect> {
    let Some((name, rest)) = def.split_first() else {
        return Some(DdlDefect::Unexpected("an empty column definition".into()));
    };
    if name.ident().is_none() {
        return Some(DdlDefect::Unexpected(name.shown()));
    }
    // The type: bare words up to the first constraint word.
    let mut i = 0;
    while let Some(t @ Token::Word(_)) = rest.get(i) {
        if CONSTRAINT_WORDS.iter().any(|w| t.is(w)) {
            break;
        }
        i += 1;
    }
    if i > 0 {
        if let Some(t) = rest.get(i).filter(|t| matches!(t, Token::Punct('('))) {
            return Some(DdlDefect::TypeForm(t.shown()));
        }
    }
    while let Some(t) = rest.get(i) {
        if t.is("NOT") {
            if !rest.get(i + 1).is_some_and(|n| n.is("NULL")) {
                return Some(DdlDefect::NullClause(shown(&rest[i..])));
            }
            if rest.get(i + 2).is_some_and(|n| n.is("ON")) {
                return Some(DdlDefect::NullClause(shown(&rest[i..])));
            }
            i += 2;
        } else if t.is("DEFAULT") {
            match rest.get(i + 1) {
                Some(Token::Number(_) | Token::Str(_) | Token::Word(_) | Token::Quoted(_))
                    if !rest.get(i + 1).is_some_and(|v| {
                        CONSTRAINT_WORDS.iter().any(|w| v.is(w)) && !v.is("NULL")
                    }) =>
                {
                    i += 2
                }
                _ => return Some(DdlDefect::DefaultForm(shown(&rest[i + 1..]))),
            }
        } else if t.is("PRIMARY") {
            if !rest.get(i + 1).is_some_and(|k| k.is("KEY")) {
                return Some(DdlDefect::Unexpected(shown(&rest[i..])));
            }
            i += 2;
            if let Some(next) = rest.get(i) {
                if !(next.is("NOT") || next.is("DEFAULT") || next.is("PRIMARY")) {
                    return Some(DdlDefect::PrimaryKeyClause(next.shown()));
                }
            }
        } else {
            return Some(foreign_clause(t));
        }
    }
    None
}

/// `tokens` as they read, space-separated (for a message).
fn shown(tokens: &[Token]) -> String {
    let words: Vec<String> = tokens.iter().map(Token::shown).collect();
    words.join(" ")
}

/// The table constraint `def`'s defect, if any: only `PRIMARY KEY (column)`.
fn table_constraint(def: &[Token]) -> Option<DdlDefect> {
    match def {
        [p, k, Token::Punct('('), col, Token::Punct(')')]
            if p.is("PRIMARY") && k.is("KEY") && col.ident().is_some() =>
        {
            None
        }
        [p, k, ..] if p.is("PRIMARY") && k.is("KEY") => {
            Some(DdlDefect::PrimaryKeyClause(shown(&def[2..])))
        }
        [first, ..] => Some(foreign_clause(first)),
        [] => Some(DdlDefect::Unexpected("an empty table constraint".into())),
    }
}

/// The clauses of the `CREATE TABLE` statement `sql` that agy's DDL does
/// not have (none: the statement uses only agy's clauses). See the module
/// documentation for what is accepted.
pub fn table_defects(sql: &str) -> Vec<Defect> {
    let toks = tokens(sql);
    let table = |defect| Defect {
        column: None,
        defect,
    };
    let head_ok = matches!(
        toks.as_slice(),
        [c, t, name, Token::Punct('('), ..] if c.is("CREATE") && t.is("TABLE") && name.ident().is_some()
    );
    if !head_ok {
        return vec![table(DdlDefect::NotCreateTable(shown(
            &toks[..toks.len().min(4)],
        )))];
    }
    // The column list: from the `(` to its matching `)`.
    let mut depth = 0usize;
    let mut close = None;
    for (i, t) in toks.iter().enumerate().skip(3) {
        match t {
            Token::Punct('(') => depth += 1,
            Token::Punct(')') => {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let Some(close) = close else {
        return vec![table(DdlDefect::Unclosed)];
    };
    let mut out = Vec::new();
    for element in elements(&toks[4..close]) {
        let starts_constraint = element.first().is_some_and(|t| {
            ["CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK", "FOREIGN"]
                .iter()
                .any(|w| t.is(w))
        });
        if starts_constraint {
            if let Some(d) = table_constraint(element) {
                out.push(table(d));
            }
        } else if let Some(d) = column(element) {
            out.push(Defect {
                column: element.first().and_then(Token::ident).map(str::to_string),
                defect: d,
            });
        }
    }
    if toks.len() > close + 1 {
        out.push(table(DdlDefect::TableOption(shown(&toks[close + 1..]))));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// agy's DDL (public-format-facts §1.2) and the older spellings of the
    /// same tables: no defect.
    #[test]
    fn agy_and_older_spellings_have_no_defect() {
        for sql in [
            "CREATE TABLE `steps` (`idx` integer,`step_type` integer NOT NULL DEFAULT 0,`status` integer NOT NULL DEFAULT 0,`has_subtrajectory` numeric NOT NULL DEFAULT false,`metadata` blob,`error_details` blob,`permissions` blob,`task_details` blob,`render_info` blob,`step_payload` blob,`step_format` integer NOT NULL DEFAULT 0,PRIMARY KEY (`idx`))",
            "CREATE TABLE `trajectory_metadata_blob` (`id` text DEFAULT \"main\",`data` blob,PRIMARY KEY (`id`))",
            "CREATE TABLE steps (\n  idx INTEGER PRIMARY KEY,\n  step_type INTEGER NOT NULL DEFAULT 0, -- the type\n  data BLOB /* payload */\n)",
            "CREATE TABLE [trajectory_meta] (\"trajectory_id\" TEXT PRIMARY KEY, cascade_id TEXT)",
        ] {
            assert_eq!(table_defects(sql), vec![], "{sql}");
        }
    }

    fn first(sql: &str) -> Defect {
        table_defects(sql)
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("no defect in {sql}"))
    }

    fn col(name: &str, defect: DdlDefect) -> Defect {
        Defect {
            column: Some(name.into()),
            defect,
        }
    }

    fn tbl(defect: DdlDefect) -> Defect {
        Defect {
            column: None,
            defect,
        }
    }

    /// Each clause agy's DDL lacks is named, with its column.
    #[test]
    fn each_foreign_clause_is_named() {
        let t = "CREATE TABLE t (`idx` integer";
        let cases = [
            (
                format!("{t} CHECK (idx >= 0), PRIMARY KEY (idx))"),
                col("idx", DdlDefect::Check),
            ),
            (
                format!("{t}, PRIMARY KEY (idx), CHECK (idx >= 0))"),
                tbl(DdlDefect::Check),
            ),
            (
                format!("{t} COLLATE NOCASE)"),
                col("idx", DdlDefect::Collate),
            ),
            (
                format!("{t}, g integer GENERATED ALWAYS AS (1) VIRTUAL)"),
                col("g", DdlDefect::Generated),
            ),
            (
                format!("{t}, g integer AS (1) STORED)"),
                col("g", DdlDefect::Generated),
            ),
            (format!("{t}, g AS (1))"), col("g", DdlDefect::Generated)),
            (format!("{t} UNIQUE)"), col("idx", DdlDefect::Unique)),
            (format!("{t}, UNIQUE (idx))"), tbl(DdlDefect::Unique)),
            (
                format!("{t} REFERENCES other(x))"),
                col("idx", DdlDefect::ForeignKey),
            ),
            (
                format!("{t}, FOREIGN KEY (idx) REFERENCES o(x))"),
                tbl(DdlDefect::ForeignKey),
            ),
            (
                format!("{t}, CONSTRAINT pk PRIMARY KEY (idx))"),
                tbl(DdlDefect::NamedConstraint),
            ),
            (
                format!("{t} CONSTRAINT c NOT NULL)"),
                col("idx", DdlDefect::NamedConstraint),
            ),
            (
                format!("{t} PRIMARY KEY DESC)"),
                col("idx", DdlDefect::PrimaryKeyClause("DESC".into())),
            ),
            (
                format!("{t} PRIMARY KEY AUTOINCREMENT)"),
                col("idx", DdlDefect::PrimaryKeyClause("AUTOINCREMENT".into())),
            ),
            (
                format!("{t}, PRIMARY KEY (idx DESC))"),
                tbl(DdlDefect::PrimaryKeyClause("( idx DESC )".into())),
            ),
            (
                format!("{t}, PRIMARY KEY (idx) ON CONFLICT REPLACE)"),
                tbl(DdlDefect::PrimaryKeyClause(
                    "( idx ) ON CONFLICT REPLACE".into(),
                )),
            ),
            (
                format!("{t} NOT NULL ON CONFLICT IGNORE)"),
                col(
                    "idx",
                    DdlDefect::NullClause("NOT NULL ON CONFLICT IGNORE".into()),
                ),
            ),
            (
                format!("{t} NULL)"),
                col("idx", DdlDefect::NullClause("NULL".into())),
            ),
            (
                format!("{t} DEFAULT (0))"),
                col("idx", DdlDefect::DefaultForm("( 0 )".into())),
            ),
            (
                format!("{t}(10))"),
                col("idx", DdlDefect::TypeForm("(".into())),
            ),
            (
                format!("{t}) WITHOUT ROWID"),
                tbl(DdlDefect::TableOption("WITHOUT ROWID".into())),
            ),
            (
                format!("{t}) STRICT"),
                tbl(DdlDefect::TableOption("STRICT".into())),
            ),
            (
                "CREATE VIRTUAL TABLE t USING fts5(x)".into(),
                tbl(DdlDefect::NotCreateTable("CREATE VIRTUAL TABLE t".into())),
            ),
            (
                "CREATE TABLE main.t (x)".into(),
                tbl(DdlDefect::NotCreateTable("CREATE TABLE main .".into())),
            ),
            ("CREATE TABLE t (x integer".into(), tbl(DdlDefect::Unclosed)),
            (
                format!("{t} ?)"),
                col("idx", DdlDefect::Unexpected("?".into())),
            ),
        ];
        for (sql, want) in cases {
            assert_eq!(first(&sql), want, "{sql}");
        }
    }

    /// Quoting and comments are read as SQLite reads them: a clause inside
    /// a string, identifier or comment is no clause, and one after them is.
    #[test]
    fn quoting_and_comments_hide_nothing_and_invent_nothing() {
        for sql in [
            "CREATE TABLE t (`a CHECK(1)` integer, \"b COLLATE\"\"x\" text, [c UNIQUE] blob, d text DEFAULT 'CHECK (x)'/* CHECK (1) */)",
            "CREATE TABLE t (a integer -- CHECK (1)\n)",
        ] {
            assert_eq!(table_defects(sql), vec![], "{sql}");
        }
        for (sql, want) in [
            (
                "CREATE TABLE t (a integer /* x */ CHECK (1))",
                DdlDefect::Check,
            ),
            (
                "CREATE TABLE t (a integer -- x\n CHECK (1))",
                DdlDefect::Check,
            ),
            (
                "CREATE TABLE t (a text DEFAULT 'it''s' COLLATE nocase)",
                DdlDefect::Collate,
            ),
            ("CREATE TABLE t (`a``b` text CHECK (1))", DdlDefect::Check),
            // A blob is a literal, but no agy default is one.
            (
                "CREATE TABLE t (a blob DEFAULT x'00')",
                DdlDefect::DefaultForm("x'00'".into()),
            ),
        ] {
            assert_eq!(first(sql).defect, want, "{sql}");
        }
        // An unterminated quote swallows the rest: the list never closes.
        for sql in [
            "CREATE TABLE t (a text DEFAULT 'x)",
            "CREATE TABLE t (a `text)",
            "CREATE TABLE t (a [text)",
        ] {
            assert_eq!(first(sql).defect, DdlDefect::Unclosed, "{sql}");
        }
    }
}
