//! The planning memo's key and value: what [`crate::actions`] looks up in, and records
//! into, the [`once_db::PlanMemo`] a one-shot front end installs, so that a new process
//! plans a target whose inputs did not change without starting Starlark.
//!
//! **The key** ([`plan_memo_key`]) is a SHA-256 over a canonical, length-prefixed
//! encoding of everything a kind's implementation can observe:
//!
//! - the memo format ([`PLAN_MEMO_FORMAT`]);
//! - the kind's origin: the prelude file (its text is part of the binary, whose identity
//!   the memo's storage adds to every key), or the module path, the resource limits and
//!   [`workspace_modules_digest`]: the path and text of every `.star` file of the
//!   workspace, since modules `load` each other;
//! - every field of the [`PlanRequest`] (the context the implementation receives).
//!
//! Implementations see nothing else: the Starlark globals read no file, clock,
//! environment or randomness, and `load` reads workspace `.star` files only. The one
//! builtin whose answer is not a function of its argument is `debug()` (it may show
//! addresses): a workspace whose modules name `debug` is never memoised, and no prelude
//! module calls it (a test checks).
//!
//! **The value** is the planned [`TargetActions`] in a small versioned binary encoding
//! ([`encode_target_actions`]); anything [`decode_target_actions`] does not accept
//! completely is a miss. Only successful plans are recorded: failures and missing
//! implementations are planned again, so their diagnostics stay exact.

use once_db::{Db, Sha256Digest, Workspace, source_text};
use once_model::AttrValue;
use once_starlark::{EvalLimits, PlanDep, PlanRequest};

use once_model::codec::ValueWriter;

/// The version of the memo's key and value encodings; part of every key.
pub const PLAN_MEMO_FORMAT: &str = "once.plan.memo.v2";

/// Where the implementation being planned comes from.
#[derive(Clone, Copy, Debug)]
pub enum MemoOrigin<'a> {
    /// A prelude file (`generic.star`).
    Prelude(&'a str),
    /// A project module, with the limits it is evaluated under and
    /// [`workspace_modules_digest`].
    Module {
        path: &'a str,
        limits: &'a EvalLimits,
        modules: Sha256Digest,
    },
}

/// The memo key of planning `request` with an implementation from `origin`.
pub fn plan_memo_key(origin: MemoOrigin<'_>, request: &PlanRequest) -> Sha256Digest {
    let mut key = ValueWriter::default();
    key.field("format", PLAN_MEMO_FORMAT);
    match origin {
        MemoOrigin::Prelude(file) => key.field("origin.prelude", file),
        MemoOrigin::Module {
            path,
            limits,
            modules,
        } => {
            key.field("origin.module", path);
            key.field("limits.max_steps", &limits.max_steps.to_string());
            key.field("limits.max_bytes", &limits.max_bytes.to_string());
            key.field("limits.max_call_depth", &limits.max_call_depth.to_string());
            key.field(
                "limits.deadline_ns",
                &limits.deadline.as_nanos().to_string(),
            );
            key.field("modules", &modules.to_hex());
        }
    }
    // Destructured without `..`: a field added to the request fails to compile here
    // until it is part of the key.
    let PlanRequest {
        target,
        package,
        name,
        kind,
        capability,
        attrs,
        srcs,
        build_dir,
        deps,
        tools,
        workspace_inputs,
        toolchains,
    } = request;
    key.field("target", target);
    key.field("package", package);
    key.field("name", name);
    key.field("kind", kind);
    key.field("capability", capability);
    key.field("attrs", &attrs.len().to_string());
    for (name, value) in attrs {
        key.field("attr.name", name);
        attr_key(&mut key, value);
    }
    key.field("srcs", &srcs.len().to_string());
    for src in srcs {
        key.field("src", src);
    }
    key.field("build_dir", build_dir);
    key.field("deps", &deps.len().to_string());
    for dep in deps {
        let PlanDep {
            target,
            kind,
            role,
            providers,
            outputs,
        } = dep;
        key.field("dep.target", target);
        key.field("dep.kind", kind);
        key.field("dep.role", role);
        key.field("dep.providers", &providers.len().to_string());
        for provider in providers {
            key.field("dep.provider", provider);
        }
        key.field("dep.outputs", &outputs.len().to_string());
        for output in outputs {
            key.field("dep.output", output);
        }
    }
    key.field("tools", &tools.len().to_string());
    for tool in tools {
        key.field("tool", tool);
    }
    key.field("workspace_inputs", &workspace_inputs.len().to_string());
    for input in workspace_inputs {
        key.field("workspace_input", input);
    }
    key.field("toolchains", &toolchains.len().to_string());
    for (name, value) in toolchains {
        key.field("toolchain.name", name);
        key.field("toolchain.value", value);
    }
    Sha256Digest::of(&key.0)
}

/// One attribute value, tagged by type (lists and tables with their lengths).
fn attr_key(key: &mut ValueWriter, value: &AttrValue) {
    match value {
        AttrValue::String(s) => key.field("value.string", s),
        AttrValue::Int(i) => key.field("value.int", &i.to_string()),
        AttrValue::Float(f) => key.field("value.float", &f.0.to_bits().to_string()),
        AttrValue::Bool(b) => key.field("value.bool", if *b { "true" } else { "false" }),
        AttrValue::Datetime(s) => key.field("value.datetime", s),
        AttrValue::List(items) => {
            key.field("value.list", &items.len().to_string());
            for item in items {
                attr_key(key, item);
            }
        }
        AttrValue::Dict(entries) => {
            key.field("value.table", &entries.len().to_string());
            for (name, item) in entries {
                key.field("value.key", name);
                attr_key(key, item);
            }
        }
    }
}

/// The path and text (or read error) of every `.star` file of the workspace, as one
/// digest; `None` when a module names `debug` (its plans are not memoised).
#[salsa::tracked]
pub fn workspace_modules_digest(db: &dyn Db, workspace: Workspace) -> Option<Sha256Digest> {
    let mut key = ValueWriter::default();
    let files = workspace.star_files(db);
    key.field("modules", &files.len().to_string());
    for &file in files {
        key.field("module.path", file.path(db));
        let text = source_text(db, file);
        match &text.read_error {
            Some(error) => key.field("module.error", error),
            None => {
                if names_debug(&text.text) {
                    return None;
                }
                key.field("module.text", &text.text);
            }
        }
    }
    Some(Sha256Digest::of(&key.0))
}

/// The version of [`plan_inputs_digest`]'s encoding; part of the digest.
pub const PLAN_INPUTS_FORMAT: &str = "once.plan.inputs.v2";

/// Everything a plan of this workspace reads except the digests of the files its
/// actions read, as one digest: the root, the host platform, every package (its path,
/// its manifest's path and text, the files it owns) and every `.star` file
/// ([`workspace_modules_digest`]). These are the database's inputs that planning reads
/// (the walk's results and the texts of manifests and modules), so two databases with
/// the same digest plan every target alike but for the digests of the files the
/// actions read, which static keys take from the files. `None` when a module names
/// `debug` (see [`workspace_modules_digest`]).
#[salsa::tracked]
pub fn plan_inputs_digest(db: &dyn Db, workspace: Workspace) -> Option<Sha256Digest> {
    let modules = (*workspace_modules_digest(db, workspace))?;
    let mut key = ValueWriter::default();
    key.field("format", PLAN_INPUTS_FORMAT);
    key.field("root", &workspace.root(db).to_string_lossy());
    let host = workspace.host(db);
    key.field("host.os", &host.os);
    key.field("host.arch", &host.arch);
    key.field("modules", &modules.to_hex());
    let packages = workspace.packages(db);
    key.field("packages", &packages.len().to_string());
    for &package in packages {
        key.field("package.path", package.path(db));
        let manifest = package.manifest(db);
        key.field("package.manifest", manifest.path(db));
        let text = source_text(db, manifest);
        match &text.read_error {
            Some(error) => key.field("manifest.error", error),
            None => key.field("manifest.text", &text.text),
        }
        let files = package.files(db);
        key.field("package.files", &files.len().to_string());
        for file in files {
            key.field("package.file", file);
        }
        // Which files are links decides what resolution checks (where they lead is in the
        // digests of the plan's inputs).
        for link in package.links(db) {
            key.field("package.link", link);
        }
    }
    Some(Sha256Digest::of(&key.0))
}

/// Whether `text` holds the word `debug` outside a longer identifier (in code, a
/// comment or a string alike: when in doubt, no memo).
pub fn names_debug(text: &str) -> bool {
    debug_words(text).next().is_some()
}

/// The byte offsets of the word `debug` in `text`, outside longer identifiers.
fn debug_words(text: &str) -> impl Iterator<Item = usize> + '_ {
    let identifier = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let bytes = text.as_bytes();
    text.match_indices("debug").filter_map(move |(at, word)| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(at + word.len()).copied();
        (!before.is_some_and(identifier) && !after.is_some_and(identifier)).then_some(at)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use once_model::Float;

    fn request() -> PlanRequest {
        PlanRequest {
            target: "pkg/T".to_owned(),
            package: "pkg".to_owned(),
            name: "T".to_owned(),
            kind: "command".to_owned(),
            capability: "build".to_owned(),
            attrs: vec![
                ("cmd".to_owned(), AttrValue::String("echo".to_owned())),
                (
                    "table".to_owned(),
                    AttrValue::Dict(vec![(
                        "k".to_owned(),
                        AttrValue::List(vec![AttrValue::Int(1), AttrValue::Bool(true)]),
                    )]),
                ),
            ],
            srcs: vec!["pkg/a.txt".to_owned()],
            build_dir: ".once/out/pkg/T".to_owned(),
            deps: vec![PlanDep {
                target: "pkg/D".to_owned(),
                kind: "filegroup".to_owned(),
                role: "deps".to_owned(),
                providers: vec!["files".to_owned()],
                outputs: vec![".once/out/pkg/D/x".to_owned()],
            }],
            tools: vec!["sh".to_owned()],
            workspace_inputs: Vec::new(),
            toolchains: vec![("python".to_owned(), ".venv".to_owned())],
        }
    }

    fn prelude_key(request: &PlanRequest) -> Sha256Digest {
        plan_memo_key(MemoOrigin::Prelude("generic.star"), request)
    }

    /// Every field of the request, and the origin, changes the key; equal inputs give
    /// equal keys.
    #[test]
    fn every_request_field_and_the_origin_change_the_key() {
        let base = request();
        let base_key = prelude_key(&base);
        assert_eq!(base_key, prelude_key(&request()));
        type Edit = fn(&mut PlanRequest);
        let edits: Vec<(&str, Edit)> = vec![
            ("target", |r| r.target.push('x')),
            ("package", |r| r.package.push('x')),
            ("name", |r| r.name.push('x')),
            ("kind", |r| r.kind.push('x')),
            ("capability", |r| r.capability = "test".to_owned()),
            ("attr name", |r| r.attrs[0].0.push('x')),
            ("attr value", |r| {
                r.attrs[0].1 = AttrValue::String("echo ".to_owned());
            }),
            ("attr type", |r| {
                r.attrs[0].1 = AttrValue::Datetime("echo".to_owned());
            }),
            ("nested attr", |r| {
                r.attrs[1].1 = AttrValue::Dict(vec![(
                    "k".to_owned(),
                    AttrValue::List(vec![AttrValue::Int(1), AttrValue::Bool(false)]),
                )]);
            }),
            ("float attr", |r| {
                r.attrs[0].1 = AttrValue::Float(Float(-0.0));
            }),
            ("attr removed", |r| {
                r.attrs.pop();
            }),
            ("attr order", |r| r.attrs.reverse()),
            ("srcs", |r| r.srcs.push("pkg/b.txt".to_owned())),
            ("build_dir", |r| r.build_dir.push('x')),
            ("dep target", |r| r.deps[0].target.push('x')),
            ("dep kind", |r| r.deps[0].kind.push('x')),
            ("dep role", |r| r.deps[0].role.push('x')),
            ("dep providers", |r| r.deps[0].providers.clear()),
            ("dep outputs", |r| r.deps[0].outputs.push("y".to_owned())),
            ("deps", |r| r.deps.clear()),
            ("tools", |r| r.tools.push("cc".to_owned())),
            ("workspace inputs", |r| {
                r.workspace_inputs.push("Cargo.toml".to_owned());
            }),
            ("toolchain value", |r| r.toolchains[0].1.push('2')),
            ("toolchains", |r| r.toolchains.clear()),
            // A string moving between neighbouring lists.
            ("provider becomes output", |r| {
                let provider = r.deps[0].providers.remove(0);
                r.deps[0].outputs.insert(0, provider);
            }),
        ];
        let mut keys = vec![base_key];
        for (what, edit) in edits {
            let mut edited = base.clone();
            edit(&mut edited);
            let key = prelude_key(&edited);
            assert!(!keys.contains(&key), "{what} did not change the key");
            keys.push(key);
        }
        let limits = EvalLimits::default();
        let module = |path, limits, modules| {
            plan_memo_key(
                MemoOrigin::Module {
                    path,
                    limits,
                    modules,
                },
                &base,
            )
        };
        let modules = Sha256Digest::of(b"modules");
        let tighter = EvalLimits {
            max_steps: 10,
            ..EvalLimits::default()
        };
        for key in [
            plan_memo_key(MemoOrigin::Prelude("rust.star"), &base),
            module("kinds.star", &limits, modules),
            module("other.star", &limits, modules),
            module("kinds.star", &tighter, modules),
            module("kinds.star", &limits, Sha256Digest::of(b"edited")),
        ] {
            assert!(!keys.contains(&key), "an origin did not change the key");
            keys.push(key);
        }
    }

    #[test]
    fn debug_is_found_as_a_word_only() {
        assert!(names_debug("x = debug(y)"));
        assert!(names_debug("f = debug"));
        assert!(names_debug("# debug"));
        assert!(!names_debug("debugger = 1\nmy_debug = 2\ndebug2 = 3"));
    }

    /// No prelude module calls `debug()`, so every prelude plan may be memoised: the word
    /// appears only as the string `"debug"`.
    #[test]
    fn the_prelude_never_calls_debug() {
        let kinds = once_starlark::prelude_kinds().as_ref().expect("prelude");
        let mut files: Vec<&str> = kinds
            .iter()
            .filter_map(|kind| match &kind.origin {
                once_model::KindOrigin::Prelude(file) => Some(file.as_str()),
                once_model::KindOrigin::Module(_) => None,
            })
            .collect();
        files.sort_unstable();
        files.dedup();
        assert!(files.len() > 3, "{files:?}");
        for file in files {
            let text = String::from_utf8_lossy(once_starlark::prelude_file(file).expect(file));
            for at in debug_words(&text) {
                assert!(
                    text[..at].ends_with('"') && text[at + "debug".len()..].starts_with('"'),
                    "prelude/{file} names `debug` outside a string at byte {at}"
                );
            }
        }
    }
}
