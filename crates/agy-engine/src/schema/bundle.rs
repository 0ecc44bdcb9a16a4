//! `schema bundle`: a pinned bundle is a base set plus exactly the named
//! declarations copied from a newer extraction.
//!
//! A name is a message or enum (`pkg.Msg`, `pkg.Msg.Nested`, `pkg.Enum`,
//! copied whole with its nested declarations), a field (`pkg.Msg.field`,
//! copied with its optional-field presence: a proto3 `optional` brings its
//! synthetic oneof) or an enum value (`pkg.Enum.VALUE`). Refused: a name the
//! newer set does not declare; a name already in the base with a different
//! definition (the same definition is a no-op); a field or value number the
//! base already uses; a declaration whose file, parent or referenced type is
//! neither in the base nor added; a field joining a real oneof the base lacks.
//! The result is loaded as a pool and diffed against the base: the delta must
//! be exactly the named declarations, nothing removed or changed.

use super::diff::{describe_field, diff, SchemaDiff};
use super::{decode_pool, PoolError, UnsupportedSyntax};
use prost::Message;
use prost_reflect::DescriptorPool;
use prost_types::{DescriptorProto, EnumDescriptorProto, FileDescriptorProto, FileDescriptorSet};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// Manifest format written beside a bundle.
pub const BUNDLE_FORMAT: &str = "agy-audit-bundle/v1";

/// Why a bundle was refused.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("{which}: not a valid FileDescriptorSet: {detail}")]
    Invalid { which: &'static str, detail: String },
    #[error("{which}: {source}")]
    Syntax {
        which: &'static str,
        #[source]
        source: UnsupportedSyntax,
    },
    #[error("{0}: not declared by the --from set (a message, enum, field pkg.Msg.field or enum value pkg.Enum.VALUE)")]
    NotFound(String),
    #[error(
        "{name}: already in the base with a different definition (base: {base}; from: {from})"
    )]
    Conflict {
        name: String,
        base: String,
        from: String,
    },
    #[error(
        "{name}: depends on {needs}, which is neither in the base nor added (add it with --add)"
    )]
    Dependency { name: String, needs: String },
    #[error("{name}: its file {file} is not in the base")]
    NoFile { name: String, file: String },
    #[error("{name}: {detail}")]
    Unsupported { name: String, detail: String },
    #[error("the bundle's delta over the base is not exactly the named declarations: {0}")]
    Delta(String),
}

/// A built bundle.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// The serialized FileDescriptorSet.
    pub set: Vec<u8>,
    pub sha256: [u8; 32],
    /// The declarations added (names as given), in order.
    pub added: Vec<String>,
    /// Names already in the base with the same definition (no-ops).
    pub unchanged: Vec<String>,
    /// The checked delta over the base.
    pub delta: SchemaDiff,
}

#[derive(Debug, Clone)]
enum Decl {
    Message {
        file: String,
        path: Vec<String>,
    },
    Enum {
        file: String,
        path: Vec<String>,
    },
    Field {
        file: String,
        msg: Vec<String>,
        field: String,
    },
    Value {
        file: String,
        en: Vec<String>,
        value: String,
    },
}

fn invalid(which: &'static str) -> impl Fn(String) -> BundleError {
    move |detail| BundleError::Invalid { which, detail }
}

impl BundleError {
    /// Which input the error is about (`--base`, `--from`, or `bundle` for
    /// the result), for the refusals of a set that does not load.
    pub fn which(&self) -> Option<&'static str> {
        match self {
            BundleError::Invalid { which, .. } | BundleError::Syntax { which, .. } => Some(which),
            _ => None,
        }
    }
}

/// A pool from a serialized set, behind the syntax guard.
fn pool(which: &'static str, set: &[u8]) -> Result<DescriptorPool, BundleError> {
    decode_pool(set).map_err(|e| match e {
        PoolError::Syntax(source) => BundleError::Syntax { which, source },
        e => invalid(which)(e.to_string()),
    })
}

/// `pkg.A.B` in a file of package `pkg` -> `[A, B]`.
fn rel_path(package: &str, full: &str) -> Vec<String> {
    let rest = if package.is_empty() {
        full
    } else {
        full.strip_prefix(package)
            .and_then(|r| r.strip_prefix('.'))
            .unwrap_or(full)
    };
    rest.split('.').map(str::to_string).collect()
}

/// The message a nested declaration at `path` goes into (`None`: the file's
/// top level); a parent the bundle does not hold refuses `name`.
fn enclosing<'a>(
    dst: &'a mut FileDescriptorProto,
    path: &[String],
    name: &str,
) -> Result<Option<&'a mut DescriptorProto>, BundleError> {
    let (parents, _) = path.split_at(path.len().saturating_sub(1));
    if parents.is_empty() {
        return Ok(None);
    }
    find_msg(dst, parents)
        .map(Some)
        .ok_or_else(|| BundleError::Dependency {
            name: name.to_string(),
            needs: parents.join("."),
        })
}

fn find_msg<'a>(
    f: &'a mut FileDescriptorProto,
    path: &[String],
) -> Option<&'a mut DescriptorProto> {
    let (first, rest) = path.split_first()?;
    let mut m = f.message_type.iter_mut().find(|m| m.name() == first)?;
    for p in rest {
        m = m.nested_type.iter_mut().find(|n| n.name() == p)?;
    }
    Some(m)
}

fn find_enum<'a>(
    f: &'a mut FileDescriptorProto,
    path: &[String],
) -> Option<&'a mut EnumDescriptorProto> {
    let (last, parents) = path.split_last()?;
    let list = if parents.is_empty() {
        &mut f.enum_type
    } else {
        &mut find_msg(f, parents)?.enum_type
    };
    list.iter_mut().find(|e| e.name() == last)
}

/// Referenced type names (with a leading dot) of a message, nested included.
fn referenced(m: &DescriptorProto, out: &mut BTreeSet<String>) {
    for f in &m.field {
        if !f.type_name().is_empty() {
            out.insert(f.type_name().to_string());
        }
    }
    for n in &m.nested_type {
        referenced(n, out);
    }
}

/// Declared names (with a leading dot) inside a message, itself included.
fn declared(prefix: &str, m: &DescriptorProto, out: &mut BTreeSet<String>) {
    let name = format!("{prefix}.{}", m.name());
    for e in &m.enum_type {
        out.insert(format!("{name}.{}", e.name()));
    }
    for n in &m.nested_type {
        declared(&name, n, out);
    }
    out.insert(name);
}

/// The raw bytes of each file of a serialized set, by name.
fn raw_files(set: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut buf = set;
    while !buf.is_empty() {
        let Ok(tag) = prost::encoding::decode_varint(&mut buf) else {
            break;
        };
        let Ok(len) = prost::encoding::decode_varint(&mut buf) else {
            break;
        };
        let Some(len) = usize::try_from(len).ok().filter(|l| *l <= buf.len()) else {
            break;
        };
        let (body, rest) = buf.split_at(len);
        if tag == 0x0a {
            if let Ok(f) = FileDescriptorProto::decode(body) {
                out.insert(f.name().to_string(), body.to_vec());
            }
        }
        buf = rest;
    }
    out
}

/// Builds the bundle of `base` plus the declarations `add` from `from`.
pub fn bundle(base: &[u8], from: &[u8], add: &[String]) -> Result<Bundle, BundleError> {
    let base_pool = pool("--base", base)?;
    let from_pool = pool("--from", from)?;
    let mut base_set =
        FileDescriptorSet::decode(base).map_err(|e| invalid("--base")(e.to_string()))?;
    let from_set = FileDescriptorSet::decode(from).map_err(|e| invalid("--from")(e.to_string()))?;
    let from_files: BTreeMap<&str, &FileDescriptorProto> =
        from_set.file.iter().map(|f| (f.name(), f)).collect();

    let decls = add
        .iter()
        .map(|name| classify(&from_pool, name).map(|d| (name.to_string(), d)))
        .collect::<Result<Vec<_>, _>>()?;
    let ctx = Ctx::new(base_pool, from_pool, &decls);

    let mut added = Vec::new();
    let mut unchanged = Vec::new();
    let mut touched: BTreeSet<String> = BTreeSet::new();
    let mut needs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, d) in &decls {
        if ctx.inside_whole(name) {
            unchanged.push(name.to_string());
            continue;
        }
        let file_name = d.file().to_string();
        match ctx.place(name, d, &from_files, &mut base_set)? {
            Placed::Unchanged => unchanged.push(name.to_string()),
            Placed::Added(refs) => {
                if !refs.is_empty() {
                    needs.entry(file_name.to_string()).or_default().extend(refs);
                }
                touched.insert(file_name);
                added.push(name.to_string());
            }
        }
    }

    ctx.add_imports(&mut base_set, &needs);
    let set = encode_set(base, &base_set, &touched);
    let delta = ctx.check_delta(&set, &added)?;
    let sha256 = Sha256::digest(&set).into();
    Ok(Bundle {
        set,
        sha256,
        added,
        unchanged,
        delta,
    })
}

/// Classifies one `--add` name by what the newer set declares under it: a
/// message, an enum, a message's field or an enum's value.
fn classify(from_pool: &DescriptorPool, name: &str) -> Result<Decl, BundleError> {
    if let Some(m) = from_pool.get_message_by_name(name) {
        let f = m.parent_file();
        return Ok(Decl::Message {
            file: f.name().to_string(),
            path: rel_path(f.package_name(), name),
        });
    }
    if let Some(e) = from_pool.get_enum_by_name(name) {
        let f = e.parent_file();
        return Ok(Decl::Enum {
            file: f.name().to_string(),
            path: rel_path(f.package_name(), name),
        });
    }
    let (parent, leaf) = name
        .rsplit_once('.')
        .ok_or_else(|| BundleError::NotFound(name.to_string()))?;
    if let Some(m) = from_pool
        .get_message_by_name(parent)
        .filter(|m| m.get_field_by_name(leaf).is_some())
    {
        let f = m.parent_file();
        return Ok(Decl::Field {
            file: f.name().to_string(),
            msg: rel_path(f.package_name(), parent),
            field: leaf.to_string(),
        });
    }
    if let Some(e) = from_pool
        .get_enum_by_name(parent)
        .filter(|e| e.get_value_by_name(leaf).is_some())
    {
        let f = e.parent_file();
        return Ok(Decl::Value {
            file: f.name().to_string(),
            en: rel_path(f.package_name(), parent),
            value: leaf.to_string(),
        });
    }
    Err(BundleError::NotFound(name.to_string()))
}

impl Decl {
    /// The file (of the newer set) that declares it.
    fn file(&self) -> &str {
        match self {
            Decl::Message { file, .. }
            | Decl::Enum { file, .. }
            | Decl::Field { file, .. }
            | Decl::Value { file, .. } => file,
        }
    }
}

/// What placing one named declaration into the bundle did.
enum Placed {
    /// Copied in; the type names (leading dot) it references, for the imports.
    Added(BTreeSet<String>),
    /// Already in the base with the same definition: a no-op.
    Unchanged,
}

/// `describe_field` with the field's number, the form a conflict shows.
fn field_text(f: &prost_reflect::FieldDescriptor) -> String {
    format!("{} = {}", describe_field(f), f.number())
}

/// The two loaded sets and the whole types the bundle adds, which every
/// placement and the final delta check consult.
struct Ctx {
    base_pool: DescriptorPool,
    from_pool: DescriptorPool,
    /// Types the bundle adds (whole messages and enums, nested included),
    /// with a leading dot.
    added_types: BTreeSet<String>,
    /// The names given for whole messages and enums.
    whole: BTreeSet<String>,
}

impl Ctx {
    /// Collects the whole types the classified declarations add.
    fn new(base_pool: DescriptorPool, from_pool: DescriptorPool, decls: &[(String, Decl)]) -> Ctx {
        let mut added_types: BTreeSet<String> = BTreeSet::new();
        let whole: BTreeSet<String> = decls
            .iter()
            .filter(|(_, d)| matches!(d, Decl::Message { .. } | Decl::Enum { .. }))
            .map(|(n, _)| n.clone())
            .collect();
        for (name, d) in decls {
            match d {
                Decl::Message { .. } => {
                    if let Some(m) = from_pool.get_message_by_name(name) {
                        let prefix = match m.parent_message() {
                            Some(p) => format!(".{}", p.full_name()),
                            None if m.package_name().is_empty() => String::new(),
                            None => format!(".{}", m.package_name()),
                        };
                        declared(&prefix, m.descriptor_proto(), &mut added_types);
                    }
                }
                Decl::Enum { .. } => {
                    added_types.insert(format!(".{name}"));
                }
                _ => {}
            }
        }
        Ctx {
            base_pool,
            from_pool,
            added_types,
            whole,
        }
    }

    /// A referenced type (leading dot) the bundle adds or the base declares.
    fn known(&self, t: &str) -> bool {
        self.added_types.contains(t)
            || t.strip_prefix('.').is_some_and(|n| {
                self.base_pool.get_message_by_name(n).is_some()
                    || self.base_pool.get_enum_by_name(n).is_some()
            })
    }

    /// Part of a whole message or enum added in the same bundle.
    fn inside_whole(&self, name: &str) -> bool {
        self.whole.iter().any(|w| {
            name.len() > w.len() && name.starts_with(w.as_str()) && name.as_bytes()[w.len()] == b'.'
        })
    }

    /// Places one named declaration into its file of `base_set` (copied from
    /// its file in `from_files`), or finds it already there unchanged.
    fn place(
        &self,
        name: &str,
        d: &Decl,
        from_files: &BTreeMap<&str, &FileDescriptorProto>,
        base_set: &mut FileDescriptorSet,
    ) -> Result<Placed, BundleError> {
        let file_name = d.file();
        let Some(src) = from_files.get(file_name) else {
            return Err(BundleError::NotFound(name.to_string()));
        };
        let mut src = (*src).clone();
        let Some(dst) = base_set.file.iter_mut().find(|f| f.name() == file_name) else {
            return Err(BundleError::NoFile {
                name: name.to_string(),
                file: file_name.to_string(),
            });
        };
        match d {
            Decl::Message { path, .. } => self.place_message(name, path, &mut src, dst),
            Decl::Enum { path, .. } => self.place_enum(name, path, &mut src, dst),
            Decl::Field { msg, field, .. } => self.place_field(name, msg, field, &mut src, dst),
            Decl::Value { en, value, .. } => self.place_value(name, en, value, &mut src, dst),
        }
    }

    /// A whole message: refused if the base holds a different one, or if a
    /// type it references is neither in the base nor added.
    fn place_message(
        &self,
        name: &str,
        path: &[String],
        src: &mut FileDescriptorProto,
        dst: &mut FileDescriptorProto,
    ) -> Result<Placed, BundleError> {
        let m = find_msg(src, path)
            .cloned()
            .ok_or_else(|| BundleError::NotFound(name.to_string()))?;
        if let Some(b) = self.base_pool.get_message_by_name(name) {
            let fm = self.from_pool.get_message_by_name(name);
            let desc = |fs: Vec<String>| fs.join("; ");
            let bd = desc(b.fields().map(|f| field_text(&f)).collect());
            let fd = fm
                .map(|m| desc(m.fields().map(|f| field_text(&f)).collect()))
                .unwrap_or_default();
            return unchanged_or_conflict(name, bd, fd);
        }
        if self.base_pool.get_enum_by_name(name).is_some() {
            return Err(BundleError::Conflict {
                name: name.to_string(),
                base: "an enum".into(),
                from: "a message".into(),
            });
        }
        let mut refs = BTreeSet::new();
        referenced(&m, &mut refs);
        for t in &refs {
            if !self.known(t) {
                return Err(BundleError::Dependency {
                    name: name.to_string(),
                    needs: t.trim_start_matches('.').to_string(),
                });
            }
        }
        match enclosing(dst, path, name)? {
            Some(parent) => parent.nested_type.push(m),
            None => dst.message_type.push(m),
        }
        Ok(Placed::Added(refs))
    }

    /// A whole enum: refused if the base holds one with different values.
    fn place_enum(
        &self,
        name: &str,
        path: &[String],
        src: &mut FileDescriptorProto,
        dst: &mut FileDescriptorProto,
    ) -> Result<Placed, BundleError> {
        let e = find_enum(src, path)
            .cloned()
            .ok_or_else(|| BundleError::NotFound(name.to_string()))?;
        if let Some(b) = self.base_pool.get_enum_by_name(name) {
            let bd: Vec<String> = b
                .values()
                .map(|v| format!("{}={}", v.name(), v.number()))
                .collect();
            let fd: Vec<String> = e
                .value
                .iter()
                .map(|v| format!("{}={}", v.name(), v.number()))
                .collect();
            return unchanged_or_conflict(name, bd.join(", "), fd.join(", "));
        }
        match enclosing(dst, path, name)? {
            Some(parent) => parent.enum_type.push(e),
            None => dst.enum_type.push(e),
        }
        Ok(Placed::Added(BTreeSet::new()))
    }

    /// One field of a base message: refused if the base message lacks it,
    /// holds it differently, uses its number, or its type is unknown.
    fn place_field(
        &self,
        name: &str,
        msg: &[String],
        field: &str,
        src: &mut FileDescriptorProto,
        dst: &mut FileDescriptorProto,
    ) -> Result<Placed, BundleError> {
        let parent_name = name.rsplit_once('.').map(|(p, _)| p).unwrap_or_default();
        let Some(from_msg) = find_msg(src, msg).cloned() else {
            return Err(BundleError::NotFound(name.to_string()));
        };
        let Some(f) = from_msg.field.iter().find(|f| f.name() == field).cloned() else {
            return Err(BundleError::NotFound(name.to_string()));
        };
        let Some(base_msg) = self.base_pool.get_message_by_name(parent_name) else {
            return Err(BundleError::Dependency {
                name: name.to_string(),
                needs: parent_name.to_string(),
            });
        };
        let from_fd = self
            .from_pool
            .get_message_by_name(parent_name)
            .and_then(|m| m.get_field_by_name(field))
            .ok_or_else(|| BundleError::NotFound(name.to_string()))?;
        if let Some(b) = base_msg.get_field_by_name(field) {
            let (bd, fd) = (field_text(&b), field_text(&from_fd));
            return unchanged_or_conflict(name, bd, fd);
        }
        if let Some(b) = base_msg.get_field(from_fd.number()) {
            return Err(BundleError::Conflict {
                name: name.to_string(),
                base: format!("number {} is {}", b.number(), describe_field(&b)),
                from: field_text(&from_fd),
            });
        }
        let mut refs = BTreeSet::new();
        if !f.type_name().is_empty() {
            if !self.known(f.type_name()) {
                return Err(BundleError::Dependency {
                    name: name.to_string(),
                    needs: f.type_name().trim_start_matches('.').to_string(),
                });
            }
            refs.insert(f.type_name().to_string());
        }
        let Some(dst_msg) = find_msg(dst, msg) else {
            return Err(BundleError::Dependency {
                name: name.to_string(),
                needs: parent_name.to_string(),
            });
        };
        let f = with_oneof(name, f, &from_msg, dst_msg)?;
        dst_msg.field.push(f);
        Ok(Placed::Added(refs))
    }

    /// One value of a base enum: refused if the base enum lacks it, holds it
    /// with another number, or uses its number.
    fn place_value(
        &self,
        name: &str,
        en: &[String],
        value: &str,
        src: &mut FileDescriptorProto,
        dst: &mut FileDescriptorProto,
    ) -> Result<Placed, BundleError> {
        let parent_name = name.rsplit_once('.').map(|(p, _)| p).unwrap_or_default();
        let Some(v) =
            find_enum(src, en).and_then(|e| e.value.iter().find(|v| v.name() == value).cloned())
        else {
            return Err(BundleError::NotFound(name.to_string()));
        };
        let Some(base_enum) = self.base_pool.get_enum_by_name(parent_name) else {
            return Err(BundleError::Dependency {
                name: name.to_string(),
                needs: parent_name.to_string(),
            });
        };
        if let Some(b) = base_enum.get_value_by_name(value) {
            let (bd, fd) = (
                format!("{} = {}", b.name(), b.number()),
                format!("{} = {}", v.name(), v.number()),
            );
            return unchanged_or_conflict(name, bd, fd);
        }
        if let Some(b) = base_enum.get_value(v.number()) {
            return Err(BundleError::Conflict {
                name: name.to_string(),
                base: format!("number {} is {}", b.number(), b.name()),
                from: format!("{} = {}", v.name(), v.number()),
            });
        }
        let Some(dst_enum) = find_enum(dst, en) else {
            return Err(BundleError::Dependency {
                name: name.to_string(),
                needs: parent_name.to_string(),
            });
        };
        dst_enum.value.push(v);
        Ok(Placed::Added(BTreeSet::new()))
    }

    /// The file (base first, then the newer set) defining a referenced type.
    fn defining_file(&self, t: &str) -> Option<String> {
        let n = t.strip_prefix('.')?;
        let in_pool = |p: &DescriptorPool| {
            p.get_message_by_name(n)
                .map(|m| m.parent_file().name().to_string())
                .or_else(|| {
                    p.get_enum_by_name(n)
                        .map(|e| e.parent_file().name().to_string())
                })
        };
        in_pool(&self.base_pool).or_else(|| in_pool(&self.from_pool))
    }

    /// Imports, in each touched file, for the referenced types defined in
    /// other files.
    fn add_imports(
        &self,
        base_set: &mut FileDescriptorSet,
        needs: &BTreeMap<String, BTreeSet<String>>,
    ) {
        for (file, types) in needs {
            let deps: BTreeSet<String> =
                types.iter().filter_map(|t| self.defining_file(t)).collect();
            if let Some(f) = base_set.file.iter_mut().find(|f| f.name() == file) {
                for d in deps {
                    if d != *file && !f.dependency.contains(&d) {
                        f.dependency.push(d);
                    }
                }
            }
        }
    }

    /// Loads the result and diffs it against the base: the delta must be
    /// purely additive and exactly the `added` names (or parts of them).
    fn check_delta(&self, set: &[u8], added: &[String]) -> Result<SchemaDiff, BundleError> {
        let new_pool = pool("bundle", set)?;
        let delta = diff(&self.base_pool, &new_pool);
        if !delta.additive() {
            return Err(BundleError::Delta(delta.text()));
        }
        let requested: BTreeSet<&str> = added.iter().map(String::as_str).collect();
        for c in &delta.added {
            let ok = requested.contains(c.name.as_str()) || self.inside_whole(&c.name);
            if !ok {
                return Err(BundleError::Delta(format!(
                    "unexpected addition {} {}",
                    c.kind, c.name
                )));
            }
        }
        for n in added {
            if !delta.added.iter().any(|c| &c.name == n) {
                return Err(BundleError::Delta(format!(
                    "{n} does not appear in the delta"
                )));
            }
        }
        Ok(delta)
    }
}

/// A field joining its oneof in the bundle's message: a proto3 `optional`
/// brings its synthetic oneof; a real oneof must already be in the base.
fn with_oneof(
    name: &str,
    mut f: prost_types::FieldDescriptorProto,
    from_msg: &DescriptorProto,
    dst_msg: &mut DescriptorProto,
) -> Result<prost_types::FieldDescriptorProto, BundleError> {
    let Some(i) = f.oneof_index else {
        return Ok(f);
    };
    let Some(o) = usize::try_from(i)
        .ok()
        .and_then(|i| from_msg.oneof_decl.get(i))
    else {
        return Err(BundleError::NotFound(name.to_string()));
    };
    if f.proto3_optional() {
        f.oneof_index = Some(dst_msg.oneof_decl.len() as i32);
        dst_msg.oneof_decl.push(o.clone());
    } else if let Some(j) = dst_msg.oneof_decl.iter().position(|b| b.name() == o.name()) {
        f.oneof_index = Some(j as i32);
    } else {
        return Err(BundleError::Unsupported {
            name: name.to_string(),
            detail: format!("joins oneof {}, which the base message lacks", o.name()),
        });
    }
    Ok(f)
}

/// Encodes the set: untouched files keep their base bytes, in base order.
fn encode_set(base: &[u8], base_set: &FileDescriptorSet, touched: &BTreeSet<String>) -> Vec<u8> {
    let raw = raw_files(base);
    let mut set = Vec::new();
    for f in &base_set.file {
        let body = match raw.get(f.name()) {
            Some(r) if !touched.contains(f.name()) => r.clone(),
            _ => f.encode_to_vec(),
        };
        prost::encoding::encode_key(1, prost::encoding::WireType::LengthDelimited, &mut set);
        prost::encoding::encode_varint(body.len() as u64, &mut set);
        set.extend(body);
    }
    set
}
/// A declaration the base already holds: unchanged when the base's
/// description (`base`) is the added one's (`from`), else a conflict naming
/// both.
fn unchanged_or_conflict(name: &str, base: String, from: String) -> Result<Placed, BundleError> {
    if base == from {
        Ok(Placed::Unchanged)
    } else {
        Err(BundleError::Conflict {
            name: name.to_string(),
            base,
            from,
        })
    }
}
