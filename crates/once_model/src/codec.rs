//! The one length-prefixed binary encoding of the files `once` keeps between processes
//! (the plan memo's values, last plans, the entries of the store's keyed files) and of
//! the canonical encodings keys are hashed over: bytes, little-endian integers, and
//! strings and lists prefixed by their length ([`ValueWriter`], [`ValueReader`]), and
//! the encoding of planned actions on top of it ([`encode_target_actions`],
//! [`encode_action`]). A reader answers `None` for anything it does not accept
//! completely; callers treat that as a miss.

use std::collections::BTreeMap;

use crate::action::{Action, ActionStep, Command, OutputSymlinks, TargetActions};

/// The first field of every encoded value.
const VALUE_FORMAT: &str = "once.plan.value.v4";

/// [`TargetActions`] as bytes: every string and list length-prefixed (little-endian
/// `u64`), every variant tagged; [`decode_target_actions`] reads it back.
pub fn encode_target_actions(actions: &TargetActions) -> Vec<u8> {
    let mut out = ValueWriter::default();
    out.str(VALUE_FORMAT);
    out.u64(actions.actions.len() as u64);
    // Destructured without `..`: a field added fails to compile here.
    let TargetActions {
        actions,
        default_outputs,
    } = actions;
    for action in actions {
        encode_action(&mut out, action);
    }
    out.strs(default_outputs);
    out.0
}

/// Appends `action` to `out` ([`decode_action`] reads it back).
pub fn encode_action(out: &mut ValueWriter, action: &Action) {
    // Destructured without `..`: a field added to an action fails to compile here.
    let Action {
        id,
        target,
        capability,
        step,
        inputs,
        outputs,
        cacheable,
    } = action;
    out.str(id);
    out.str(target);
    out.str(capability);
    match step {
        ActionStep::Run(Command {
            argv,
            env,
            cwd,
            success_exit_codes,
            probes,
            depfile,
            timeout_seconds,
            output_symlinks,
            network,
        }) => {
            out.u8(0);
            out.strs(argv);
            out.u64(env.len() as u64);
            for (name, value) in env {
                out.str(name);
                out.str(value);
            }
            out.str(cwd);
            out.u64(success_exit_codes.len() as u64);
            for code in success_exit_codes {
                out.u64(u64::from(code.cast_unsigned()));
            }
            out.u64(probes.len() as u64);
            for probe in probes {
                out.strs(probe);
            }
            match depfile {
                None => out.u8(0),
                Some(depfile) => {
                    out.u8(1);
                    out.str(depfile);
                }
            }
            match *timeout_seconds {
                None => out.u8(0),
                Some(seconds) => {
                    out.u8(1);
                    out.u64(seconds);
                }
            }
            out.u8(match output_symlinks {
                OutputSymlinks::Preserve => 0,
                OutputSymlinks::MaterializeExternal => 1,
            });
            out.u8(u8::from(*network));
        }
        ActionStep::WriteFile {
            path,
            content,
            executable,
        } => {
            out.u8(1);
            out.str(path);
            out.str(content);
            out.u8(u8::from(*executable));
        }
        ActionStep::Copy { from, to } => {
            out.u8(2);
            out.str(from);
            out.str(to);
        }
        ActionStep::Symlink { to, link } => {
            out.u8(3);
            out.str(to);
            out.str(link);
        }
        ActionStep::MakeDir { path } => {
            out.u8(4);
            out.str(path);
        }
        ActionStep::MaterializeHostFile { source, to } => {
            out.u8(5);
            out.str(source);
            out.str(to);
        }
    }
    out.strs(inputs);
    out.strs(outputs);
    out.u8(u8::from(*cacheable));
}

/// The [`TargetActions`] [`encode_target_actions`] wrote, or `None` unless `bytes` are
/// exactly one value of this version.
pub fn decode_target_actions(bytes: &[u8]) -> Option<TargetActions> {
    let mut input = ValueReader::new(bytes);
    if input.str()? != VALUE_FORMAT {
        return None;
    }
    let count = input.count()?;
    let mut actions = Vec::with_capacity(count);
    for _ in 0..count {
        actions.push(decode_action(&mut input)?);
    }
    let default_outputs = input.strs()?;
    input.is_empty().then_some(TargetActions {
        actions,
        default_outputs,
    })
}

/// The next action of `input`, as [`encode_action`] wrote it.
pub fn decode_action(input: &mut ValueReader<'_>) -> Option<Action> {
    let id = input.str()?;
    let target = input.str()?;
    let capability = input.str()?;
    let step = match input.u8()? {
        0 => {
            let argv = input.strs()?;
            let mut env = BTreeMap::new();
            for _ in 0..input.count()? {
                let name = input.str()?;
                let value = input.str()?;
                if env.insert(name, value).is_some() {
                    return None;
                }
            }
            let cwd = input.str()?;
            let mut success_exit_codes = Vec::new();
            for _ in 0..input.count()? {
                let code = u32::try_from(input.u64()?).ok()?;
                success_exit_codes.push(code.cast_signed());
            }
            let mut probes = Vec::new();
            for _ in 0..input.count()? {
                probes.push(input.strs()?);
            }
            let depfile = match input.u8()? {
                0 => None,
                1 => Some(input.str()?),
                _ => return None,
            };
            let timeout_seconds = match input.u8()? {
                0 => None,
                1 => Some(input.u64()?),
                _ => return None,
            };
            let output_symlinks = match input.u8()? {
                0 => OutputSymlinks::Preserve,
                1 => OutputSymlinks::MaterializeExternal,
                _ => return None,
            };
            let network = input.bool()?;
            ActionStep::Run(Command {
                argv,
                env,
                cwd,
                success_exit_codes,
                probes,
                depfile,
                timeout_seconds,
                output_symlinks,
                network,
            })
        }
        1 => ActionStep::WriteFile {
            path: input.str()?,
            content: input.str()?,
            executable: input.bool()?,
        },
        2 => ActionStep::Copy {
            from: input.str()?,
            to: input.str()?,
        },
        3 => ActionStep::Symlink {
            to: input.str()?,
            link: input.str()?,
        },
        4 => ActionStep::MakeDir { path: input.str()? },
        5 => ActionStep::MaterializeHostFile {
            source: input.str()?,
            to: input.str()?,
        },
        _ => return None,
    };
    let inputs = input.strs()?;
    let outputs = input.strs()?;
    let cacheable = input.bool()?;
    Some(Action {
        id,
        target,
        capability,
        step,
        inputs,
        outputs,
        cacheable,
    })
}

/// The memo's binary encoding: bytes, little-endian `u64`s, and strings and lists
/// prefixed by their length.
#[derive(Default)]
pub struct ValueWriter(pub Vec<u8>);

impl ValueWriter {
    pub fn u8(&mut self, value: u8) {
        self.0.push(value);
    }

    pub fn u32(&mut self, value: u32) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }

    pub fn u64(&mut self, value: u64) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }

    pub fn bytes(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }

    pub fn str(&mut self, text: &str) {
        self.u64(text.len() as u64);
        self.0.extend_from_slice(text.as_bytes());
    }

    /// A named field of a canonical key encoding: the name, then the value, each
    /// length-prefixed, so no two field sequences encode alike.
    pub fn field(&mut self, name: &str, value: &str) {
        self.str(name);
        self.str(value);
    }

    pub fn strs(&mut self, items: &[String]) {
        self.u64(items.len() as u64);
        for item in items {
            self.str(item);
        }
    }
}

/// Reads what a [`ValueWriter`] wrote; every read is `None` past the end.
pub struct ValueReader<'a>(&'a [u8]);

impl<'a> ValueReader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        ValueReader(bytes)
    }

    /// Whether everything was read.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn take(&mut self, length: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(length)?;
        self.0 = rest;
        Some(head)
    }

    pub fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    pub fn bool(&mut self) -> Option<bool> {
        match self.u8()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }

    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    /// A count of items, each taking at least one byte of what is left.
    pub fn count(&mut self) -> Option<usize> {
        usize::try_from(self.u64()?)
            .ok()
            .filter(|&count| count <= self.0.len())
    }

    pub fn str(&mut self) -> Option<String> {
        let length = usize::try_from(self.u64()?).ok()?;
        let bytes = self.take(length)?;
        String::from_utf8(bytes.to_vec()).ok()
    }

    pub fn strs(&mut self) -> Option<Vec<String>> {
        let count = self.count()?;
        let mut items = Vec::with_capacity(count);
        for _ in 0..count {
            items.push(self.str()?);
        }
        Some(items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_actions() -> TargetActions {
        let mut command = Command::new(vec!["sh".to_owned(), "-c".to_owned(), "é".to_owned()]);
        command.env.insert("A".to_owned(), "1".to_owned());
        command.env.insert("B".to_owned(), String::new());
        command.cwd = "pkg".to_owned();
        command.success_exit_codes = vec![-1, 0, 3];
        command.probes = vec![vec!["rustc".to_owned(), "-vV".to_owned()], Vec::new()];
        command.depfile = Some(".once/out/pkg/T/d".to_owned());
        command.timeout_seconds = Some(u64::MAX);
        let action = |id: &str, step| Action {
            id: format!("pkg/T#build/{id}"),
            target: "pkg/T".to_owned(),
            capability: "build".to_owned(),
            step,
            inputs: vec!["pkg/a.txt".to_owned()],
            outputs: vec![".once/out/pkg/T/o".to_owned()],
            cacheable: id != "run",
        };
        TargetActions {
            actions: vec![
                action("run", ActionStep::Run(command)),
                action(
                    "plain",
                    ActionStep::Run(Command::new(vec!["true".to_owned()])),
                ),
                action(
                    "write",
                    ActionStep::WriteFile {
                        path: "p".to_owned(),
                        content: "line\n\0".to_owned(),
                        executable: true,
                    },
                ),
                action(
                    "copy",
                    ActionStep::Copy {
                        from: "a".to_owned(),
                        to: "b".to_owned(),
                    },
                ),
                action(
                    "symlink",
                    ActionStep::Symlink {
                        to: "../x".to_owned(),
                        link: "l".to_owned(),
                    },
                ),
                action(
                    "mkdir",
                    ActionStep::MakeDir {
                        path: "d".to_owned(),
                    },
                ),
            ],
            default_outputs: vec![".once/out/pkg/T/o".to_owned()],
        }
    }

    #[test]
    fn values_round_trip() {
        for actions in [TargetActions::default(), sample_actions()] {
            let bytes = encode_target_actions(&actions);
            assert_eq!(decode_target_actions(&bytes), Some(actions));
        }
    }

    /// Every truncation, an extra byte and every single-byte change that breaks the
    /// structure decode to nothing, never a panic.
    #[test]
    fn damaged_values_are_misses() {
        let bytes = encode_target_actions(&sample_actions());
        for length in 0..bytes.len() {
            assert_eq!(decode_target_actions(&bytes[..length]), None, "{length}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode_target_actions(&longer), None);
        for at in 0..bytes.len() {
            let mut changed = bytes.clone();
            changed[at] ^= 0xff;
            // A changed string byte may still decode (the store's file checksum catches
            // those); a changed structure byte must not crash.
            let _ = decode_target_actions(&changed);
        }
        let mut version = bytes;
        version[8 + VALUE_FORMAT.len() - 1] = b'0';
        assert_eq!(decode_target_actions(&version), None);
    }
}
