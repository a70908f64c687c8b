//! Confined programs, run for real: what they may read and write, the network they see,
//! the processes they leave and the status they end with.

use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use std::collections::BTreeMap;

use once_sandbox::{Confinement, Exec, Prepared};

/// `program` with `args` and this test's environment, confined by `prepared`.
fn confined(prepared: &Prepared, program: &str, args: &[&str]) -> Command {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let argv: Vec<String> = std::iter::once(program)
        .chain(args.iter().copied())
        .map(String::from)
        .collect();
    let mut command = Command::new(program);
    command.args(args).env_clear().envs(&env);
    let exec = Exec {
        path: Path::new(program),
        argv: &argv,
        env: &env,
    };
    prepared
        .install(&mut command, &exec)
        .expect("the program's image");
    command
}

/// The system directories a shell needs.
fn system(confinement: &mut Confinement) {
    for path in ["/usr", "/bin", "/lib", "/lib64", "/etc", "/proc"] {
        confinement.read.push(path.into());
    }
    confinement.write.push("/dev".into());
}

/// Runs `script` under `sh -c` in `cwd`, confined.
fn check(confinement: &Confinement, cwd: &Path, script: &str) -> Output {
    let prepared = confinement.prepare().expect("this machine can confine");
    let mut command = confined(&prepared, "/bin/sh", &["-c", script]);
    command
        .current_dir(cwd)
        .stdin(Stdio::null())
        .process_group(0);
    command.output().expect("sh starts")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

use std::os::unix::process::CommandExt as _;

#[test]
fn only_allowed_files_are_read_and_only_allowed_directories_written() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("out")).unwrap();
    std::fs::write(root.join("src/declared.txt"), "declared").unwrap();
    std::fs::write(root.join("src/secret.txt"), "secret").unwrap();
    let mut confinement = Confinement::new(false);
    system(&mut confinement);
    confinement.read.push(root.join("src/declared.txt"));
    confinement.write.push(root.join("out"));
    let output = check(
        &confinement,
        root,
        "cat src/declared.txt; cat src/secret.txt || true; echo made > out/made.txt; \
         echo overwritten > src/declared.txt; echo new > src/new.txt; \
         echo appended >> src/declared.txt; exit 0",
    );
    assert!(output.status.success(), "{output:?}");
    assert_eq!(text(&output.stdout), "declared");
    let errors = text(&output.stderr);
    assert!(
        errors.contains("src/secret.txt: Permission denied"),
        "{errors}"
    );
    assert!(
        errors.contains("src/new.txt: Permission denied"),
        "{errors}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("out/made.txt")).unwrap(),
        "made\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/declared.txt")).unwrap(),
        "declared"
    );
    assert!(!root.join("src/new.txt").exists());
}

#[test]
fn the_network_is_a_loopback_of_its_own_unless_allowed() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let bash = |network: bool| {
        let mut confinement = Confinement::contain_only(network);
        confinement.filesystem = false;
        let prepared = confinement.prepare().unwrap();
        let mut command = confined(&prepared, "/bin/bash", &["-c", &script]);
        command.stdin(Stdio::null());
        command.output().unwrap()
    };
    let offline = bash(false);
    assert!(!offline.status.success(), "{offline:?}");
    assert!(
        text(&offline.stderr).contains("Connection refused"),
        "{offline:?}"
    );
    let online = bash(true);
    assert_eq!(text(&online.stdout), "connected\n", "{online:?}");
    // Its own loopback is up: it can serve itself.
    let served = {
        let prepared = Confinement::contain_only(false).prepare().unwrap();
        let mut command = confined(
            &prepared,
            "/usr/bin/python3",
            &[
                "-c",
                "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); \
                 c=socket.create_connection(s.getsockname()); print('served')",
            ],
        );
        command.stdin(Stdio::null());
        command.output().unwrap()
    };
    assert_eq!(text(&served.stdout), "served\n", "{served:?}");
}

#[test]
fn the_status_is_the_programs_and_nothing_it_started_outlives_it() {
    let marker = format!("6{}", std::process::id());
    let prepared = Confinement::contain_only(false).prepare().unwrap();
    let script = format!(
        "setsid sleep {marker} & (nohup sleep {marker} >/dev/null 2>&1 &) ; \
         sh -c 'sleep {marker} &' ; exit 7"
    );
    let mut command = confined(&prepared, "/bin/sh", &["-c", &script]);
    command.stdin(Stdio::null());
    let status = command.status().unwrap();
    assert_eq!(status.code(), Some(7));
    std::thread::sleep(std::time::Duration::from_millis(100));
    let survivors: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| std::fs::read(entry.ok()?.path().join("cmdline")).ok())
        .map(|line| text(&line).replace('\0', " "))
        .filter(|line| line.contains(&marker))
        .collect();
    assert!(survivors.is_empty(), "{survivors:?}");

    let mut killed = confined(&prepared, "/bin/sh", &["-c", "kill -9 $$"]);
    killed.stdin(Stdio::null());
    assert_eq!(killed.status().unwrap().signal(), Some(9));
}

#[test]
fn a_polite_signal_to_the_group_reaches_the_program_and_ends_it_its_way() {
    let prepared = Confinement::contain_only(true).prepare().unwrap();
    let mut command = confined(
        &prepared,
        "/bin/sh",
        &[
            "-c",
            "trap 'echo caught; exit 3' TERM; echo ready; sleep 30 & wait",
        ],
    );
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .process_group(0);
    let mut child = command.spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut ready = [0u8; 6];
    std::io::Read::read_exact(&mut stdout, &mut ready).unwrap();
    assert_eq!(&ready, b"ready\n");
    let group = i32::try_from(child.id()).unwrap();
    assert!(group > 1);
    // SAFETY: sending a signal to the child's own process group.
    assert_eq!(unsafe { libc::kill(-group, libc::SIGTERM) }, 0);
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert_eq!(rest, "caught\n");
    assert_eq!(status.code(), Some(3), "{status:?}");
}

#[test]
fn a_script_without_an_interpreter_line_runs_with_sh_and_a_program_that_cannot_run_says_so() {
    let root = tempfile::tempdir().unwrap();
    let script = root.path().join("plain");
    std::fs::write(&script, "echo plain \"$1\"\n").unwrap();
    let unreadable = root.path().join("locked");
    std::fs::write(&unreadable, "#!/bin/sh\necho never\n").unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    for path in [&script, &unreadable] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut confinement = Confinement::new(false);
    system(&mut confinement);
    confinement.read.push(script.clone());
    let prepared = confinement.prepare().unwrap();
    let plain = script.to_str().unwrap();
    let output = confined(&prepared, plain, &["argument"]).output().unwrap();
    assert_eq!(text(&output.stdout), "plain argument\n", "{output:?}");
    assert!(output.status.success(), "{output:?}");

    let locked = unreadable.to_str().unwrap();
    let output = confined(&prepared, locked, &[]).output().unwrap();
    assert_eq!(output.status.code(), Some(127), "{output:?}");
    assert_eq!(
        text(&output.stderr),
        format!("once: cannot execute `{locked}`: permission denied\n")
    );
}
