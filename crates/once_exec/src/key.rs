//! Action keys: the SHA-256 of a canonical encoding of everything an action's result
//! depends on.
//!
//! The planner (analysis) computes a *static key* per action from what is known before
//! anything runs (the declaration and the digests of its source inputs). The executor
//! joins, at execution time, what only exists then: the identity of the program the
//! action runs and the output digests of the actions that produce its inputs. Because the
//! dependents see output *digests*, not dependency keys, a dependency rebuilt into
//! byte-identical outputs leaves its dependents' keys unchanged (early cutoff).
//!
//! ## The encoding (format version [`KEY_FORMAT_VERSION`])
//!
//! Every value is length-prefixed: a byte string is its length as a little-endian `u64`
//! followed by the bytes; a number is a little-endian `u64`; a list is its count followed
//! by its items. Each field is preceded by its name, itself a byte string, so no two
//! different sequences of fields encode to the same bytes. In order:
//!
//! 1. `"once.action-key"`, then the format version;
//! 2. `static`: the planner's static key (32 bytes);
//! 3. `step`: the step's kind (`run`, `write`, `copy`, `symlink`, `mkdir`) and its fields
//!    (for `run`: argv, the declared environment as sorted name/value pairs, cwd, the
//!    success exit codes, the probe commands, the dependency file, the time limit, the
//!    output symlink mode, which decides whether a link leaving an output is stored as a
//!    link or as a copy of its target, and whether it may reach the network);
//! 4. `inputs` and `outputs`: the declared paths, sorted and deduplicated;
//! 5. `host-env`: the values of the keyed allowlisted variables
//!    ([`crate::environment::KEYED_VARIABLES`]) the action sees, name/value pairs, an unset
//!    variable left out;
//! 6. `tool`: absent (count 0) or the resolved path (`$WORKSPACE/…` inside the
//!    workspace) and content digest of `argv[0]`;
//! 7. `dependency-outputs`: for each output of another action that an input names (equal
//!    to or under it), its path and its output digest ([`crate::record::OutputEntry`]),
//!    sorted by path;
//! 8. `probes`: for each probe of a `run` step, in order, the digest of its result (its
//!    exit status and standard output, [`crate::probes`]);
//! 9. `sandbox`: `on` or `off` ([`crate::sandbox::SandboxMode`]): a result made
//!    unconfined (which may have read undeclared files) is never reused by a sandboxed
//!    build, nor the other way round.
//!
//! The declaration is encoded again here although the static key covers it: a planner
//! that forgets a field can then never make two different actions share a result.

use std::collections::BTreeMap;

use once_model::Sha256Digest;
use once_model::action::{Action, ActionStep};
use sha2::{Digest as _, Sha256};

/// The version of the encoding below; bump it whenever the encoding or the meaning of a
/// result record changes, so old results are never reused.
pub const KEY_FORMAT_VERSION: u64 = 5;

/// The identity of a program an action runs: where it was found and what is in it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ToolIdentity {
    /// The absolute path it was found at (not resolved through links: the digest is of the
    /// content reached through them); `$WORKSPACE/<relative path>` for a program inside
    /// the workspace, so checkouts at different places share keys.
    pub path: String,
    pub digest: Sha256Digest,
}

/// A streaming SHA-256 over length-prefixed values.
pub struct KeyHasher {
    hasher: Sha256,
}

impl KeyHasher {
    /// A hasher that has already absorbed the magic and the format version.
    pub fn new() -> KeyHasher {
        let mut hasher = KeyHasher {
            hasher: Sha256::new(),
        };
        hasher.bytes(b"once.action-key");
        hasher.number(KEY_FORMAT_VERSION);
        hasher
    }

    /// A byte string: its length, then the bytes.
    pub fn bytes(&mut self, bytes: &[u8]) {
        self.number(bytes.len() as u64);
        self.hasher.update(bytes);
    }

    /// A number, little-endian.
    pub fn number(&mut self, value: u64) {
        self.hasher.update(value.to_le_bytes());
    }

    /// A field name (a byte string).
    pub fn field(&mut self, name: &str) {
        self.bytes(name.as_bytes());
    }

    /// A list of strings: the count, then each.
    pub fn strings<'a>(&mut self, items: impl ExactSizeIterator<Item = &'a str>) {
        self.number(items.len() as u64);
        for item in items {
            self.bytes(item.as_bytes());
        }
    }

    pub fn finish(self) -> Sha256Digest {
        Sha256Digest(self.hasher.finalize().into())
    }
}

impl Default for KeyHasher {
    fn default() -> Self {
        KeyHasher::new()
    }
}

/// What joins an action's static key at execution time.
#[derive(Debug, Clone, Default)]
pub struct KeyParts<'a> {
    /// The keyed allowlisted variables the action sees (name → value).
    pub host_env: BTreeMap<&'a str, &'a str>,
    pub tool: Option<&'a ToolIdentity>,
    /// `(output path, output digest)` of each dependency output the action consumes.
    pub dependency_outputs: Vec<(&'a str, Sha256Digest)>,
    /// The result digest of each of the command's probes, in order.
    pub probe_results: Vec<Sha256Digest>,
    /// Whether the action runs sandboxed.
    pub sandbox: crate::sandbox::SandboxMode,
}

/// The key of `action`: see the module documentation for the encoding.
pub fn action_key(
    action: &Action,
    static_key: &Sha256Digest,
    parts: &KeyParts<'_>,
) -> Sha256Digest {
    let mut hasher = KeyHasher::new();
    hasher.field("static");
    hasher.bytes(&static_key.0);
    hasher.field("step");
    encode_step(&mut hasher, &action.step);
    hasher.field("inputs");
    hasher.strings(sorted(&action.inputs).into_iter());
    hasher.field("outputs");
    hasher.strings(sorted(&action.outputs).into_iter());
    hasher.field("host-env");
    hasher.number(parts.host_env.len() as u64);
    for (name, value) in &parts.host_env {
        hasher.bytes(name.as_bytes());
        hasher.bytes(value.as_bytes());
    }
    hasher.field("tool");
    match parts.tool {
        None => hasher.number(0),
        Some(tool) => {
            hasher.number(1);
            hasher.bytes(tool.path.as_bytes());
            hasher.bytes(&tool.digest.0);
        }
    }
    hasher.field("dependency-outputs");
    let mut dependencies = parts.dependency_outputs.clone();
    dependencies.sort();
    dependencies.dedup();
    hasher.number(dependencies.len() as u64);
    for (path, digest) in dependencies {
        hasher.bytes(path.as_bytes());
        hasher.bytes(&digest.0);
    }
    hasher.field("probes");
    hasher.number(parts.probe_results.len() as u64);
    for digest in &parts.probe_results {
        hasher.bytes(&digest.0);
    }
    hasher.field("sandbox");
    hasher.bytes(parts.sandbox.name().as_bytes());
    hasher.finish()
}

fn sorted(paths: &[String]) -> Vec<&str> {
    let mut paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    paths.sort_unstable();
    paths.dedup();
    paths
}

fn encode_step(hasher: &mut KeyHasher, step: &ActionStep) {
    match step {
        ActionStep::Run(command) => {
            hasher.field("run");
            hasher.strings(command.argv.iter().map(String::as_str));
            hasher.number(command.env.len() as u64);
            for (name, value) in &command.env {
                hasher.bytes(name.as_bytes());
                hasher.bytes(value.as_bytes());
            }
            hasher.bytes(command.cwd.as_bytes());
            hasher.number(command.success_exit_codes.len() as u64);
            for code in &command.success_exit_codes {
                hasher.number(u64::from(code.cast_unsigned()));
            }
            hasher.number(command.probes.len() as u64);
            for probe in &command.probes {
                hasher.strings(probe.iter().map(String::as_str));
            }
            hasher.bytes(command.depfile.as_deref().unwrap_or("").as_bytes());
            // 0: no time limit.
            hasher.number(command.timeout_seconds.unwrap_or(0));
            hasher.bytes(command.output_symlinks.as_str().as_bytes());
            hasher.number(u64::from(command.network));
        }
        ActionStep::WriteFile {
            path,
            content,
            executable,
        } => {
            hasher.field("write");
            hasher.bytes(path.as_bytes());
            hasher.bytes(content.as_bytes());
            hasher.number(u64::from(*executable));
        }
        ActionStep::Copy { from, to } => {
            hasher.field("copy");
            hasher.bytes(from.as_bytes());
            hasher.bytes(to.as_bytes());
        }
        ActionStep::MaterializeHostFile { source, to } => {
            hasher.field("materialize-host-file");
            hasher.bytes(source.as_bytes());
            hasher.bytes(to.as_bytes());
        }
        ActionStep::Symlink { to, link } => {
            hasher.field("symlink");
            hasher.bytes(to.as_bytes());
            hasher.bytes(link.as_bytes());
        }
        ActionStep::MakeDir { path } => {
            hasher.field("mkdir");
            hasher.bytes(path.as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use once_model::action::Command;

    fn run_action(argv: &[&str]) -> Action {
        Action {
            id: "app/App#build/0".to_owned(),
            target: "app/App".to_owned(),
            capability: "build".to_owned(),
            step: ActionStep::Run(Command::new(argv.iter().map(|s| s.to_string()).collect())),
            inputs: vec!["app/main.c".to_owned()],
            outputs: vec![".once/out/app/App/app".to_owned()],
            cacheable: true,
        }
    }

    fn command(action: &mut Action) -> &mut Command {
        match &mut action.step {
            ActionStep::Run(command) => command,
            _ => unreachable!("a run action"),
        }
    }

    #[test]
    fn every_part_of_the_key_changes_it() {
        let base = run_action(&["cc", "-o", "app", "main.c"]);
        let static_key = Sha256Digest::of(b"static");
        let tool = ToolIdentity {
            path: "/usr/bin/cc".to_owned(),
            digest: Sha256Digest::of(b"cc"),
        };
        let parts = KeyParts {
            host_env: BTreeMap::from([("LANG", "C.UTF-8")]),
            tool: Some(&tool),
            dependency_outputs: vec![(".once/out/lib/Lib/lib.a", Sha256Digest::of(b"lib"))],
            probe_results: vec![Sha256Digest::of(b"rustc 1.95.0")],
            sandbox: crate::sandbox::SandboxMode::Off,
        };
        let reference = action_key(&base, &static_key, &parts);
        assert_eq!(
            reference,
            action_key(&base, &static_key, &parts),
            "deterministic"
        );

        let mut variants: Vec<(&str, Sha256Digest)> = Vec::new();
        let mut changed = base.clone();
        command(&mut changed).argv.push("-O2".to_owned());
        variants.push(("argv", action_key(&changed, &static_key, &parts)));
        let mut changed = base.clone();
        command(&mut changed)
            .env
            .insert("CFLAGS".to_owned(), "-g".to_owned());
        variants.push(("env", action_key(&changed, &static_key, &parts)));
        let mut changed = base.clone();
        command(&mut changed).cwd = "app".to_owned();
        variants.push(("cwd", action_key(&changed, &static_key, &parts)));
        let mut changed = base.clone();
        command(&mut changed).output_symlinks =
            once_model::action::OutputSymlinks::MaterializeExternal;
        variants.push(("output symlinks", action_key(&changed, &static_key, &parts)));
        let mut changed = base.clone();
        command(&mut changed).success_exit_codes = vec![0, 1];
        variants.push(("exit codes", action_key(&changed, &static_key, &parts)));
        let mut changed = base.clone();
        command(&mut changed)
            .probes
            .push(vec!["cc".to_owned(), "--version".to_owned()]);
        variants.push(("probe command", action_key(&changed, &static_key, &parts)));
        variants.push((
            "probe result",
            action_key(
                &base,
                &static_key,
                &KeyParts {
                    probe_results: vec![Sha256Digest::of(b"rustc 1.96.0")],
                    ..parts.clone()
                },
            ),
        ));
        let mut changed = base.clone();
        changed.outputs.push(".once/out/app/App/app.map".to_owned());
        variants.push(("outputs", action_key(&changed, &static_key, &parts)));
        let mut changed = base.clone();
        changed.inputs.push("app/util.c".to_owned());
        variants.push(("inputs", action_key(&changed, &static_key, &parts)));
        variants.push((
            "static key (input digests)",
            action_key(&base, &Sha256Digest::of(b"other"), &parts),
        ));
        let other_tool = ToolIdentity {
            digest: Sha256Digest::of(b"cc 2"),
            ..tool.clone()
        };
        variants.push((
            "tool digest",
            action_key(
                &base,
                &static_key,
                &KeyParts {
                    tool: Some(&other_tool),
                    ..parts.clone()
                },
            ),
        ));
        let moved_tool = ToolIdentity {
            path: "/usr/local/bin/cc".to_owned(),
            ..tool.clone()
        };
        variants.push((
            "tool path",
            action_key(
                &base,
                &static_key,
                &KeyParts {
                    tool: Some(&moved_tool),
                    ..parts.clone()
                },
            ),
        ));
        variants.push((
            "dependency output",
            action_key(
                &base,
                &static_key,
                &KeyParts {
                    dependency_outputs: vec![(
                        ".once/out/lib/Lib/lib.a",
                        Sha256Digest::of(b"lib 2"),
                    )],
                    ..parts.clone()
                },
            ),
        ));
        variants.push((
            "host environment",
            action_key(
                &base,
                &static_key,
                &KeyParts {
                    host_env: BTreeMap::from([("LANG", "de_DE.UTF-8")]),
                    ..parts.clone()
                },
            ),
        ));
        let mut changed = base.clone();
        command(&mut changed).network = true;
        variants.push(("network", action_key(&changed, &static_key, &parts)));
        variants.push((
            "sandbox",
            action_key(
                &base,
                &static_key,
                &KeyParts {
                    sandbox: crate::sandbox::SandboxMode::On,
                    ..parts.clone()
                },
            ),
        ));
        for (part, key) in &variants {
            assert_ne!(*key, reference, "changing the {part} changes the key");
        }
        let distinct: std::collections::BTreeSet<_> = variants.iter().map(|(_, k)| *k).collect();
        assert_eq!(
            distinct.len(),
            variants.len(),
            "every variant has its own key"
        );
    }

    #[test]
    fn the_format_version_is_part_of_the_encoding() {
        let mut current = KeyHasher::new();
        current.bytes(b"x");
        let mut other = KeyHasher {
            hasher: Sha256::new(),
        };
        other.bytes(b"once.action-key");
        other.number(KEY_FORMAT_VERSION + 1);
        other.bytes(b"x");
        assert_ne!(current.finish(), other.finish());
    }

    #[test]
    fn length_prefixes_keep_neighbouring_fields_apart() {
        let mut a = KeyHasher::new();
        a.strings(["ab", "c"].into_iter());
        let mut b = KeyHasher::new();
        b.strings(["a", "bc"].into_iter());
        assert_ne!(a.finish(), b.finish());
    }

    #[test]
    fn input_and_output_order_does_not_matter() {
        let mut one = run_action(&["true"]);
        one.inputs = vec!["a".to_owned(), "b".to_owned()];
        let mut two = one.clone();
        two.inputs = vec!["b".to_owned(), "a".to_owned(), "a".to_owned()];
        let key = Sha256Digest::of(b"s");
        let parts = KeyParts::default();
        assert_eq!(
            action_key(&one, &key, &parts),
            action_key(&two, &key, &parts)
        );
    }
}
