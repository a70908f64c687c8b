//! The last plan of a request, reused while nothing it was planned from changed: a
//! one-shot `once build`, `once run`, `once test` or `once runtime start` asked again of
//! an unchanged workspace reads the plan it made last time (for tests, with the selection
//! it was made for) instead of parsing every manifest, resolving every target
//! and planning each (through the memo) again. The bytes live in the store
//! ([`super::last_plan_file`]); this module decides what they hold and when they count.
//!
//! **When a remembered plan is used.** A plan is a function of the request (the
//! capability and the patterns, as given), the binary (the store salts every key with
//! its identity), the database's inputs that planning reads (the workspace's root and
//! host platform, every package's path, manifest text and files, every `.star` file:
//! [`Analysis::plan_inputs_digest`]) and the digests and permission bits of the workspace
//! files its actions read (their static keys hold them). The entry's key is the first
//! three; the value keeps the digest and permission bits of every such file, and each is
//! compared with the file's now ([`Analysis::source_inputs`], stamp-checked like every
//! digest; the stamps are the plan's `source_stamps` for the executor). Anything
//! different, or a value this version cannot read completely, and the request is
//! planned as before and the new plan remembered. A plan with problems is never
//! remembered (they are reported from planning, every time), nor one of a workspace
//! whose modules call `debug`.

use std::collections::HashMap;
use std::path::Path;

use super::last_plan_file::LastPlan;
use once_analysis::{Analysis, Cancellable};
use once_db::Sha256Digest;
use once_exec::{PlannedAction, Store};
use once_model::codec::{ValueReader, ValueWriter, decode_action, encode_action};
use once_model::remote::RemoteCacheDecl;

use crate::testing::{SelectedTest, Selection, SelectionMode};
use crate::{Plan, PlannedTarget};

/// The first field of every value; another version's value is not read.
const VALUE_FORMAT: &str = "once.last-plan.v5";

/// What a last plan keeps of a file its actions read: its digest and permission bits, or
/// why it has none.
type SourceKey = Result<(Sha256Digest, u32), String>;

/// The canonical spelling of a request: the store keeps one last plan per workspace and
/// request.
pub fn request(patterns: &[String], capability: &str) -> String {
    let mut request = capability.to_owned();
    for pattern in patterns {
        request.push('\0');
        request.push_str(pattern);
    }
    request
}

/// The key of `request` for a workspace whose planning inputs digest to `inputs`.
fn key(inputs: &Sha256Digest, request: &str) -> Sha256Digest {
    let mut bytes = inputs.0.to_vec();
    bytes.extend_from_slice(request.as_bytes());
    Sha256Digest::of(&bytes)
}

/// The key under which `analysis`'s plan of `request` is remembered; `None` when such a
/// plan is not (a module calls `debug`).
pub fn key_of(analysis: &Analysis, request: &str) -> Cancellable<Option<Sha256Digest>> {
    Ok(analysis
        .plan_inputs_digest()?
        .map(|inputs| key(&inputs, request)))
}

/// The workspace files `plan`'s actions read (not build outputs), sorted, each once: the
/// files whose digests its static keys hold.
fn source_inputs(plan: &Plan) -> Vec<String> {
    crate::source_inputs(&plan.actions)
}

/// The last plan of a request as the store holds it, decoded: the plan and the digests
/// of the files its actions read when it was made.
pub struct Stored {
    file: LastPlan,
    plan: Plan,
    selection: Option<Selection>,
    inputs: Vec<(String, SourceKey)>,
}

impl Stored {
    /// The last plan of `request` in the workspace at `workspace_root`, if the store has
    /// one this version can read completely (a caller reads it while the workspace is
    /// loaded: whether it still holds is [`Stored::reuse`]'s question).
    pub fn load(store: &Store, workspace_root: &Path, request: &str) -> Option<Stored> {
        let file = LastPlan::load(store, workspace_root, request)?;
        let (plan, selection, inputs) = decode(file.value())?;
        Some(Stored {
            file,
            plan,
            selection,
            inputs,
        })
    }

    /// The plan (and the test selection it was made for), if it was saved under `key`
    /// ([`key_of`] now) and every file its actions read has the digest and permission
    /// bits it had when it was made (with the stamps they were read with now, for the
    /// executor); its use is then recorded in the store (unused last plans are removed
    /// after a week).
    pub fn reuse(
        self,
        analysis: &Analysis,
        store: &Store,
        key: &Sha256Digest,
    ) -> Cancellable<Option<(Plan, Option<Selection>)>> {
        if !self.file.saved_under(key) {
            return Ok(None);
        }
        let paths: Vec<String> = self.inputs.iter().map(|(path, _)| path.clone()).collect();
        let now = analysis.source_inputs(&paths)?;
        let unchanged = self
            .inputs
            .iter()
            .zip(&now)
            .all(|((_, then), now)| *then == now.key);
        if !unchanged {
            return Ok(None);
        }
        self.file.renew(store);
        let mut plan = self.plan;
        plan.source_stamps = crate::source_stamps(&paths, &now);
        Ok(Some((plan, self.selection)))
    }
}

/// Keeps `plan` (made by `analysis` for `request`, whose key is `key`, with the test
/// selection it was made for) as the last plan of `request` in the workspace at
/// `workspace_root`, unless it has problems. Failing to write it only costs planning
/// next time.
pub fn remember(
    analysis: &Analysis,
    store: &Store,
    workspace_root: &Path,
    request: &str,
    key: &Sha256Digest,
    plan: &Plan,
    selection: Option<&Selection>,
) -> Cancellable<()> {
    if let Some(value) = value_of(analysis, plan, selection)? {
        let _ = LastPlan::save(store, workspace_root, request, key, &value);
    }
    Ok(())
}

/// What to remember of `plan` (made by `analysis`), or `None` for a plan that is not
/// remembered (it has problems).
fn value_of(
    analysis: &Analysis,
    plan: &Plan,
    selection: Option<&Selection>,
) -> Cancellable<Option<Vec<u8>>> {
    if !plan.problems.is_empty() {
        return Ok(None);
    }
    let paths = source_inputs(plan);
    let now = analysis.source_inputs(&paths)?;
    let inputs: Vec<(String, SourceKey)> = paths
        .into_iter()
        .zip(now)
        .map(|(path, input)| (path, input.key))
        .collect();
    Ok(Some(encode(plan, selection, &inputs)))
}

fn encode(plan: &Plan, selection: Option<&Selection>, inputs: &[(String, SourceKey)]) -> Vec<u8> {
    let mut out = ValueWriter::default();
    out.str(VALUE_FORMAT);
    // Destructured without `..`: a field added to a plan fails to compile here.
    let Plan {
        capability,
        targets,
        actions,
        problems: _,
        kinds,
        source_stamps: _,
        sandbox,
        remote_cache,
    } = plan;
    out.str(capability);
    out.u8(match sandbox {
        None => 0,
        Some(false) => 1,
        Some(true) => 2,
    });
    encode_remote_cache(&mut out, remote_cache.as_ref());
    out.u64(targets.len() as u64);
    for target in targets {
        let PlannedTarget {
            id,
            kind,
            actions,
            default_outputs,
            output_groups,
            required_outputs,
            implemented,
            test_attempts,
        } = target;
        out.str(id);
        out.str(kind);
        out.strs(actions);
        out.strs(default_outputs);
        out.strs(output_groups);
        out.strs(required_outputs);
        out.u8(u8::from(*implemented));
        match test_attempts {
            None => out.u8(0),
            Some(attempts) => {
                out.u8(1);
                out.u64(u64::from(*attempts));
            }
        }
    }
    out.u64(actions.len() as u64);
    for PlannedAction { action, static_key } in actions {
        encode_action(&mut out, action);
        out.bytes(&static_key.0);
    }
    let mut kinds: Vec<(&String, &String)> = kinds.iter().collect();
    kinds.sort_unstable();
    out.u64(kinds.len() as u64);
    for (target, kind) in kinds {
        out.str(target);
        out.str(kind);
    }
    encode_selection(&mut out, selection);
    out.u64(inputs.len() as u64);
    for (path, digest) in inputs {
        out.str(path);
        match digest {
            Ok((digest, permissions)) => {
                out.u8(0);
                out.bytes(&digest.0);
                out.u64(u64::from(*permissions));
            }
            Err(error) => {
                out.u8(1);
                out.str(error);
            }
        }
    }
    out.0
}

/// A test selection (destructured without `..`, like the plan).
fn encode_selection(out: &mut ValueWriter, selection: Option<&Selection>) {
    let Some(Selection {
        mode,
        changed_paths,
        tests,
        warnings,
    }) = selection
    else {
        out.u8(0);
        return;
    };
    out.u8(match mode {
        SelectionMode::Explicit => 1,
        SelectionMode::Affected => 2,
        SelectionMode::Full => 3,
        SelectionMode::Directory => 4,
    });
    out.strs(changed_paths);
    out.u64(tests.len() as u64);
    for SelectedTest { id, kind, reasons } in tests {
        out.str(id);
        out.str(kind);
        out.strs(reasons);
    }
    out.strs(warnings);
}

fn decode_selection(input: &mut ValueReader<'_>) -> Option<Option<Selection>> {
    let mode = match input.u8()? {
        0 => return Some(None),
        1 => SelectionMode::Explicit,
        2 => SelectionMode::Affected,
        3 => SelectionMode::Full,
        4 => SelectionMode::Directory,
        _ => return None,
    };
    let changed_paths = input.strs()?;
    let count = input.count()?;
    let mut tests = Vec::with_capacity(count);
    for _ in 0..count {
        tests.push(SelectedTest {
            id: input.str()?,
            kind: input.str()?,
            reasons: input.strs()?,
        });
    }
    Some(Some(Selection {
        mode,
        changed_paths,
        tests,
        warnings: input.strs()?,
    }))
}

type Decoded = (Plan, Option<Selection>, Vec<(String, SourceKey)>);

fn decode(bytes: &[u8]) -> Option<Decoded> {
    let mut input = ValueReader::new(bytes);
    if input.str()? != VALUE_FORMAT {
        return None;
    }
    let capability = input.str()?;
    let sandbox = match input.u8()? {
        0 => None,
        1 => Some(false),
        2 => Some(true),
        _ => return None,
    };
    let remote_cache = decode_remote_cache(&mut input)?;
    let count = input.count()?;
    let mut targets = Vec::with_capacity(count);
    for _ in 0..count {
        targets.push(PlannedTarget {
            id: input.str()?,
            kind: input.str()?,
            actions: input.strs()?,
            default_outputs: input.strs()?,
            output_groups: input.strs()?,
            required_outputs: input.strs()?,
            implemented: input.bool()?,
            test_attempts: match input.u8()? {
                0 => None,
                1 => Some(u32::try_from(input.u64()?).ok()?),
                _ => return None,
            },
        });
    }
    let count = input.count()?;
    let mut actions = Vec::with_capacity(count);
    for _ in 0..count {
        let action = decode_action(&mut input)?;
        let static_key = Sha256Digest(input.take(32)?.try_into().ok()?);
        actions.push(PlannedAction { action, static_key });
    }
    let count = input.count()?;
    let mut kinds = HashMap::with_capacity(count);
    for _ in 0..count {
        let target = input.str()?;
        kinds.insert(target, input.str()?);
    }
    let selection = decode_selection(&mut input)?;
    let count = input.count()?;
    let mut inputs = Vec::with_capacity(count);
    for _ in 0..count {
        let path = input.str()?;
        let digest = match input.u8()? {
            0 => {
                let digest = Sha256Digest(input.take(32)?.try_into().ok()?);
                Ok((digest, u32::try_from(input.u64()?).ok()?))
            }
            1 => Err(input.str()?),
            _ => return None,
        };
        inputs.push((path, digest));
    }
    let plan = Plan {
        capability,
        targets,
        actions,
        problems: Vec::new(),
        kinds,
        source_stamps: Default::default(),
        sandbox,
        remote_cache,
    };
    input.is_empty().then_some((plan, selection, inputs))
}

/// `[cache]` as declared: a presence byte, then each field with a presence byte.
fn encode_remote_cache(out: &mut ValueWriter, cache: Option<&RemoteCacheDecl>) {
    let Some(cache) = cache else {
        out.u8(0);
        return;
    };
    out.u8(1);
    // Destructured without `..`: a field added fails to compile here.
    let RemoteCacheDecl {
        remote,
        instance_name,
        read_only,
        max_upload_size,
        upload_jobs,
        timeout_seconds,
        credentials_file,
    } = cache;
    for text in [remote, instance_name, credentials_file] {
        match text {
            Some(text) => {
                out.u8(1);
                out.str(text);
            }
            None => out.u8(0),
        }
    }
    out.u8(match read_only {
        None => 0,
        Some(false) => 1,
        Some(true) => 2,
    });
    for number in [
        *max_upload_size,
        upload_jobs.map(u64::from),
        *timeout_seconds,
    ] {
        match number {
            Some(number) => {
                out.u8(1);
                out.u64(number);
            }
            None => out.u8(0),
        }
    }
}

fn decode_remote_cache(input: &mut ValueReader<'_>) -> Option<Option<RemoteCacheDecl>> {
    if input.u8()? == 0 {
        return Some(None);
    }
    let mut text = || -> Option<Option<String>> {
        match input.u8()? {
            0 => Some(None),
            1 => Some(Some(input.str()?)),
            _ => None,
        }
    };
    let (remote, instance_name, credentials_file) = (text()?, text()?, text()?);
    let read_only = match input.u8()? {
        0 => None,
        1 => Some(false),
        2 => Some(true),
        _ => return None,
    };
    let mut number = || -> Option<Option<u64>> {
        match input.u8()? {
            0 => Some(None),
            1 => Some(Some(input.u64()?)),
            _ => None,
        }
    };
    let (max_upload_size, upload_jobs, timeout_seconds) = (number()?, number()?, number()?);
    Some(Some(RemoteCacheDecl {
        remote,
        instance_name,
        read_only,
        max_upload_size,
        upload_jobs: match upload_jobs {
            Some(jobs) => Some(u32::try_from(jobs).ok()?),
            None => None,
        },
        timeout_seconds,
        credentials_file,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use once_model::action::{Action, ActionStep, Command, OutputSymlinks};

    fn plan() -> Plan {
        let action = |id: &str, step: ActionStep| PlannedAction {
            action: Action {
                id: id.to_owned(),
                target: "pkg/T".to_owned(),
                capability: "build".to_owned(),
                step,
                inputs: vec!["pkg/in.txt".to_owned(), ".once/out/pkg/D/d".to_owned()],
                outputs: vec![".once/out/pkg/T/t".to_owned()],
                cacheable: true,
            },
            static_key: Sha256Digest::of(id.as_bytes()),
        };
        let command = Command {
            argv: vec!["sh".to_owned(), "-c".to_owned(), "true".to_owned()],
            env: [("K".to_owned(), "v".to_owned())].into(),
            cwd: "pkg".to_owned(),
            success_exit_codes: vec![0, 3],
            probes: vec![vec!["sh".to_owned(), "--version".to_owned()]],
            depfile: Some(".once/out/pkg/T/t.d".to_owned()),
            timeout_seconds: Some(9),
            output_symlinks: OutputSymlinks::MaterializeExternal,
            network: true,
        };
        Plan {
            capability: "build".to_owned(),
            targets: vec![PlannedTarget {
                id: "pkg/T".to_owned(),
                kind: "command".to_owned(),
                actions: vec!["pkg/T#build/a".to_owned()],
                default_outputs: vec![".once/out/pkg/T/t".to_owned()],
                output_groups: vec!["default".to_owned()],
                required_outputs: vec!["default".to_owned()],
                implemented: true,
                test_attempts: Some(3),
            }],
            actions: vec![
                action("pkg/T#build/a", ActionStep::Run(command)),
                action(
                    "pkg/T#build/b",
                    ActionStep::WriteFile {
                        path: ".once/out/pkg/T/w".to_owned(),
                        content: "text".to_owned(),
                        executable: true,
                    },
                ),
            ],
            problems: Vec::new(),
            kinds: HashMap::from([("pkg/T".to_owned(), "command".to_owned())]),
            source_stamps: Default::default(),
            sandbox: Some(false),
            remote_cache: Some(RemoteCacheDecl {
                remote: Some("grpc://127.0.0.1:1".to_owned()),
                read_only: Some(true),
                upload_jobs: Some(3),
                ..RemoteCacheDecl::default()
            }),
        }
    }

    /// Every part of a plan and of its inputs' digests comes back; anything but a
    /// complete value is nothing.
    #[test]
    fn plans_round_trip_and_partial_values_are_nothing() {
        let plan = plan();
        let inputs = vec![
            (
                "pkg/in.txt".to_owned(),
                Ok((Sha256Digest::of(b"in"), 0o644)),
            ),
            ("pkg/gone.txt".to_owned(), Err("no such file".to_owned())),
        ];
        let selection = Selection {
            mode: SelectionMode::Affected,
            changed_paths: vec!["pkg/in.txt".to_owned()],
            tests: vec![SelectedTest {
                id: "pkg/T".to_owned(),
                kind: "command".to_owned(),
                reasons: vec!["reads pkg/in.txt".to_owned()],
            }],
            warnings: vec!["w".to_owned()],
        };
        let bytes = encode(&plan, Some(&selection), &inputs);
        let (decoded, decoded_selection, decoded_inputs) =
            decode(&bytes).expect("a complete value");
        assert_eq!(format!("{decoded:?}"), format!("{plan:?}"));
        assert_eq!(decoded_selection, Some(selection));
        let (_, none, _) = decode(&encode(&plan, None, &inputs)).expect("a complete value");
        assert_eq!(none, None);
        assert_eq!(decoded.actions, plan.actions);
        assert_eq!(decoded_inputs, inputs);
        for length in 0..bytes.len() {
            assert!(decode(&bytes[..length]).is_none(), "cut at {length}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer).is_none());
        assert_eq!(
            source_inputs(&plan),
            ["pkg/in.txt"],
            "build outputs are not"
        );
    }
}

/// The first field of a plan sent from the workspace server to a client.
const TRANSFER_FORMAT: &str = "once.server-plan.v1";

/// `plan` as the workspace server sends it to a client (`once run`'s planning): what a
/// last plan keeps, and the stamps its sources were read with (the client's executor
/// checks them). `None` for a plan with problems (the client plans those itself, and
/// reports them).
pub fn encode_transfer(plan: &Plan) -> Option<Vec<u8>> {
    if !plan.problems.is_empty() {
        return None;
    }
    let mut out = ValueWriter::default();
    out.str(TRANSFER_FORMAT);
    let inner = encode(plan, None, &[]);
    out.u64(inner.len() as u64);
    out.bytes(&inner);
    let mut stamps: Vec<(&str, Option<once_db::FileStamp>)> = plan.source_stamps.iter().collect();
    stamps.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.u64(stamps.len() as u64);
    for (path, stamp) in stamps {
        out.str(path);
        match stamp {
            None => out.u8(0),
            Some(stamp) => {
                out.u8(1);
                out.u8(match stamp.kind {
                    once_db::EntryKind::File => 0,
                    once_db::EntryKind::Directory => 1,
                    once_db::EntryKind::Symlink => 2,
                    once_db::EntryKind::Other => 3,
                });
                out.u64(stamp.size);
                out.bytes(&stamp.mtime_ns.to_le_bytes());
                out.bytes(&stamp.ctime_ns.to_le_bytes());
                out.u64(stamp.inode);
                out.u32(stamp.mode);
            }
        }
    }
    Some(out.0)
}

/// What [`encode_transfer`] wrote; `None` unless it is complete and of this version.
pub fn decode_transfer(bytes: &[u8]) -> Option<Plan> {
    let mut input = ValueReader::new(bytes);
    if input.str()? != TRANSFER_FORMAT {
        return None;
    }
    let length = usize::try_from(input.u64()?).ok()?;
    let (mut plan, selection, inputs) = decode(input.take(length)?)?;
    if selection.is_some() || !inputs.is_empty() {
        return None;
    }
    let count = input.count()?;
    let mut stamps = HashMap::with_capacity(count);
    for _ in 0..count {
        let path = input.str()?;
        let stamp = match input.u8()? {
            0 => None,
            1 => Some(once_db::FileStamp {
                kind: match input.u8()? {
                    0 => once_db::EntryKind::File,
                    1 => once_db::EntryKind::Directory,
                    2 => once_db::EntryKind::Symlink,
                    3 => once_db::EntryKind::Other,
                    _ => return None,
                },
                size: input.u64()?,
                mtime_ns: i128::from_le_bytes(input.take(16)?.try_into().ok()?),
                ctime_ns: i128::from_le_bytes(input.take(16)?.try_into().ok()?),
                inode: input.u64()?,
                mode: input.u32()?,
            }),
            _ => return None,
        };
        stamps.insert(path, stamp);
    }
    if !input.is_empty() {
        return None;
    }
    plan.source_stamps = once_exec::SourceStamps::new(stamps);
    Some(plan)
}

#[cfg(test)]
mod transfer_tests {
    use super::*;

    #[test]
    fn a_transferred_plan_arrives_whole_with_its_stamps_and_truncations_are_refused() {
        let stamp = once_db::FileStamp {
            kind: once_db::EntryKind::File,
            size: 3,
            mtime_ns: -5,
            ctime_ns: 1 << 70,
            inode: 9,
            mode: 0o644,
        };
        let mut stamps = HashMap::new();
        stamps.insert("p/src/a.txt".to_owned(), Some(stamp));
        stamps.insert("p/src/gone.txt".to_owned(), None);
        let plan = Plan {
            capability: "run".to_owned(),
            targets: vec![PlannedTarget {
                id: "p/T".to_owned(),
                kind: "command".to_owned(),
                actions: vec!["p/T#run/run".to_owned()],
                default_outputs: Vec::new(),
                output_groups: Vec::new(),
                required_outputs: Vec::new(),
                implemented: true,
                test_attempts: Some(2),
            }],
            actions: Vec::new(),
            problems: Vec::new(),
            kinds: HashMap::from([("p/T".to_owned(), "command".to_owned())]),
            source_stamps: once_exec::SourceStamps::new(stamps),
            sandbox: Some(true),
            remote_cache: None,
        };
        let bytes = encode_transfer(&plan).unwrap();
        let back = decode_transfer(&bytes).unwrap();
        assert_eq!(back.capability, plan.capability);
        assert_eq!(format!("{:?}", back.targets), format!("{:?}", plan.targets));
        assert_eq!(back.kinds, plan.kinds);
        assert_eq!(back.sandbox, plan.sandbox);
        assert_eq!(back.source_stamps.get("p/src/a.txt"), Some(Some(stamp)));
        assert_eq!(back.source_stamps.get("p/src/gone.txt"), Some(None));
        assert_eq!(back.source_stamps.len(), 2);
        for cut in 0..bytes.len() {
            assert!(decode_transfer(&bytes[..cut]).is_none(), "cut at {cut}");
        }
    }
}
