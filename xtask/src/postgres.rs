//! Throwaway PostgreSQL clusters for the tests that need a real server (the `batch` crate's
//! PostgreSQL store).
//!
//! [`Cluster::start`] runs `initdb` into a fresh temporary folder, starts the server on a free
//! loopback port with trust authentication (nothing listens beyond 127.0.0.1), and
//! [`Cluster::env`] names it for the tests through environment variables. Dropping the
//! cluster stops the server and removes the folder, also when the tests failed. PostgreSQL
//! refuses to run as root, so as root the server runs as the `postgres` user (Debian's
//! package creates it), which then owns the folder.
//!
//! Two kinds ([`Kind`]): the *fast* cluster most tests share runs without durability and, when
//! `openssl` is installed, with TLS on (a certificate for 127.0.0.1 signed by a throwaway CA
//! made here, offline); the *durable* one keeps `fsync` and `synchronous_commit` on and comes
//! with a script that restarts it with `-m immediate`, for the crash tests that must prove
//! nothing acknowledged is lost.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util;

/// The variable the tests read the fast cluster's URL from.
pub(crate) const URL_VAR: &str = "BATCH_TEST_POSTGRES_URL";
/// The PEM file of the CA that signed the fast cluster's certificate (set when TLS is on).
pub(crate) const CA_VAR: &str = "BATCH_TEST_POSTGRES_CA";
/// The durable cluster's URL.
pub(crate) const DURABLE_URL_VAR: &str = "BATCH_TEST_POSTGRES_DURABLE_URL";
/// A program that restarts the durable cluster with `-m immediate` and returns once it
/// accepts connections again.
pub(crate) const DURABLE_RESTART_VAR: &str = "BATCH_TEST_POSTGRES_DURABLE_RESTART";
/// Every variable a cluster may set, so a run without one clears them all.
pub(crate) const ALL_VARS: [&str; 4] = [URL_VAR, CA_VAR, DURABLE_URL_VAR, DURABLE_RESTART_VAR];

/// Which cluster to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Shared by most tests: no fsync (speed), TLS on when `openssl` can make a certificate.
    Fast,
    /// For the crash tests: `fsync` and `synchronous_commit` on, restartable by a script.
    Durable,
}

/// Where Debian puts each major version's server binaries: `<this>/<version>/bin`.
const DEBIAN_ROOT: &str = "/usr/lib/postgresql";

/// The unprivileged user the server runs as when the gate runs as root.
const SERVER_USER: &str = "postgres";

/// How to get the binaries, for the skip message.
pub(crate) const INSTALL_HINT: &str = "install the server with `apt-get install postgresql` \
    (Debian/Ubuntu) or put `initdb` and `pg_ctl` on PATH";

/// Why there is no cluster.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NoCluster {
    /// The server binaries are not installed: the PostgreSQL tests are skipped.
    Missing(String),
    /// They are installed but the cluster did not start: a failure, not a skip.
    Failed(String),
}

/// A running throwaway cluster; stopped and removed on drop.
#[derive(Debug)]
pub(crate) struct Cluster {
    kind: Kind,
    bin: PathBuf,
    dir: PathBuf,
    as_user: Option<&'static str>,
    port: u16,
    /// The CA's PEM file, when the server speaks TLS.
    ca: Option<PathBuf>,
}

/// The folder holding `initdb` and `pg_ctl`: the newest Debian version under `root`, else
/// the folder of an `initdb` on `PATH`.
pub(crate) fn find_bin(root: &Path) -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            (bin.join("initdb").is_file() && bin.join("pg_ctl").is_file()).then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "0")
}

fn free_port() -> Result<u16, String> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|err| format!("no free port: {err}"))?;
    listener
        .local_addr()
        .map(|addr| addr.port())
        .map_err(|err| format!("no free port: {err}"))
}

impl Cluster {
    /// Starts a cluster, or says why there is none.
    pub(crate) fn start(kind: Kind) -> Result<Self, NoCluster> {
        let Some(bin) = find_bin(Path::new(DEBIAN_ROOT)) else {
            return Err(NoCluster::Missing(format!(
                "no PostgreSQL server binaries (initdb, pg_ctl) in {DEBIAN_ROOT}/*/bin or on \
                 PATH; {INSTALL_HINT}"
            )));
        };
        let as_user = is_root().then_some(SERVER_USER);
        let name = match kind {
            Kind::Fast => "fast",
            Kind::Durable => "durable",
        };
        let dir =
            std::env::temp_dir().join(format!("xtask-postgres-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|err| NoCluster::Failed(format!("create {}: {err}", dir.display())))?;
        let port = free_port().map_err(NoCluster::Failed)?;
        // From here on, dropping the cluster cleans up whatever was made.
        let mut cluster = Self {
            kind,
            bin,
            dir,
            as_user,
            port,
            ca: None,
        };
        if let Some(user) = as_user {
            let mut chown = Command::new("chown");
            chown.arg(user).arg(&cluster.dir);
            util::run(&mut chown)
                .map_err(|why| NoCluster::Failed(format!("{why} (is there a `{user}` user?)")))?;
        }
        let data = cluster.dir.join("data");
        let socket = cluster.dir.display().to_string();
        util::run(cluster.tool("initdb").arg("-D").arg(&data).args([
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--no-sync",
        ]))
        .map_err(NoCluster::Failed)?;
        let mut server_options =
            format!("-c listen_addresses=127.0.0.1 -p {port} -k {socket} -c max_connections=400");
        match kind {
            // Durability is worthless for a cluster thrown away after the run; speed is not.
            Kind::Fast => {
                server_options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off";
                match cluster.make_certificate() {
                    Ok(tls) => {
                        server_options += &tls;
                        cluster.ca = Some(cluster.dir.join("ca.pem"));
                    }
                    Err(why) => println!("SKIPPED: postgres TLS: {why}"),
                }
            }
            // A commit is on disk before it is acknowledged, as in production.
            Kind::Durable => {
                server_options += " -c fsync=on -c synchronous_commit=on -c full_page_writes=on";
            }
        }
        util::run(
            cluster
                .tool("pg_ctl")
                .arg("-D")
                .arg(&data)
                .arg("-l")
                .arg(cluster.dir.join("server.log"))
                .args(["-w", "-t", "60", "-o", &server_options, "start"]),
        )
        .map_err(|why| {
            let log = std::fs::read_to_string(cluster.dir.join("server.log")).unwrap_or_default();
            NoCluster::Failed(format!("{why}\n{log}"))
        })?;
        if kind == Kind::Durable {
            cluster.write_restart_script().map_err(NoCluster::Failed)?;
        }
        Ok(cluster)
    }

    /// Both clusters, started side by side (each `initdb` takes a second or two).
    pub(crate) fn start_both() -> Result<(Self, Self), NoCluster> {
        let (fast, durable) = std::thread::scope(|scope| {
            let durable = scope.spawn(|| Self::start(Kind::Durable));
            let fast = Self::start(Kind::Fast);
            (
                fast,
                durable.join().expect("the cluster start does not panic"),
            )
        });
        Ok((fast?, durable?))
    }

    /// The cluster's connection URL.
    pub(crate) fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The variables that tell the tests about this cluster.
    pub(crate) fn env(&self) -> Vec<(&'static str, String)> {
        match self.kind {
            Kind::Fast => {
                let mut vars = vec![(URL_VAR, self.url())];
                if let Some(ca) = &self.ca {
                    vars.push((CA_VAR, ca.display().to_string()));
                }
                vars
            }
            Kind::Durable => vec![
                (DURABLE_URL_VAR, self.url()),
                (
                    DURABLE_RESTART_VAR,
                    self.dir.join("restart").display().to_string(),
                ),
            ],
        }
    }

    /// Makes a throwaway CA and a server certificate for 127.0.0.1 and `localhost` signed by
    /// it (offline, with `openssl`); returns the server options that turn TLS on.
    fn make_certificate(&self) -> Result<String, String> {
        let openssl = |args: &[&str]| {
            let mut cmd = Command::new("openssl");
            cmd.args(args).current_dir(&self.dir);
            util::run(&mut cmd)
        };
        if !util::succeeds(Command::new("openssl").arg("version")) {
            return Err("no `openssl` to make a certificate with; TLS tests skip".into());
        }
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        openssl(
            &[
                &["req", "-x509"][..],
                &ec,
                &["-keyout", "ca.key", "-out", "ca.pem", "-days", "7"],
                &["-subj", "/CN=batch test CA"],
            ]
            .concat(),
        )?;
        openssl(
            &[
                &["req"][..],
                &ec,
                &[
                    "-keyout",
                    "server.key",
                    "-out",
                    "server.csr",
                    "-subj",
                    "/CN=localhost",
                ],
            ]
            .concat(),
        )?;
        std::fs::write(
            self.dir.join("server.ext"),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\n\
             basicConstraints=critical,CA:FALSE\n\
             keyUsage=critical,digitalSignature\n\
             extendedKeyUsage=serverAuth\n",
        )
        .map_err(|err| format!("write server.ext: {err}"))?;
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "7",
            "-extfile",
            "server.ext",
        ])?;
        let key = self.dir.join("server.key");
        let cert = self.dir.join("server.crt");
        if let Some(user) = self.as_user {
            // The server reads its key as its own user, and only from a private file.
            util::run(Command::new("chown").arg(user).arg(&key).arg(&cert))?;
        }
        util::run(Command::new("chmod").arg("600").arg(&key))?;
        Ok(format!(
            " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
            cert.display(),
            key.display()
        ))
    }

    /// Writes `restart`: `pg_ctl restart -m immediate` (no shutdown checkpoint, as after a
    /// crash) with the options the server was started with (`postmaster.opts`), logging to
    /// the server log so that the test's output pipes are not held open by the server.
    fn write_restart_script(&self) -> Result<(), String> {
        let quote = |path: &Path| {
            let text = path.display().to_string();
            if text.contains('\'') {
                Err(format!("a path with a quote: {text}"))
            } else {
                Ok(format!("'{text}'"))
            }
        };
        let run_as = match self.as_user {
            Some(user) => format!("runuser -u {user} -- "),
            None => String::new(),
        };
        let script = format!(
            "#!/bin/sh\n\
             # Restarts the durable test cluster as after a crash (written by cargo xtask).\n\
             exec {run_as}{} -D {} -l {} -m immediate -w -t 60 restart >/dev/null\n",
            quote(&self.bin.join("pg_ctl"))?,
            quote(&self.dir.join("data"))?,
            quote(&self.dir.join("server.log"))?,
        );
        let path = self.dir.join("restart");
        std::fs::write(&path, script).map_err(|err| format!("write {}: {err}", path.display()))?;
        util::run(Command::new("chmod").arg("755").arg(&path))
    }

    /// A command running `tool` of the server binaries, as the server user when root.
    fn tool(&self, tool: &str) -> Command {
        let path = self.bin.join(tool);
        match self.as_user {
            Some(user) => {
                let mut cmd = Command::new("runuser");
                cmd.args(["-u", user, "--"]).arg(path);
                cmd
            }
            None => Command::new(path),
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        if data.join("postmaster.pid").exists() {
            let _ = util::run(self.tool("pg_ctl").arg("-D").arg(&data).args([
                "-m",
                "immediate",
                "-w",
                "stop",
            ]));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_bin_takes_the_newest_complete_version() {
        let root = std::env::temp_dir().join(format!("xtask-pg-find-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (version, tools) in [
            ("13", &["initdb", "pg_ctl"][..]),
            ("15", &["initdb", "pg_ctl"][..]),
            ("16", &["initdb"][..]), // incomplete: skipped
            ("notes", &["initdb", "pg_ctl"][..]),
        ] {
            let bin = root.join(version).join("bin");
            std::fs::create_dir_all(&bin).unwrap();
            for tool in tools {
                std::fs::write(bin.join(tool), "").unwrap();
            }
        }
        assert_eq!(find_bin(&root), Some(root.join("15").join("bin")));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn cluster_starts_answers_and_is_removed() {
        let cluster = match Cluster::start(Kind::Fast) {
            Ok(cluster) => cluster,
            Err(NoCluster::Missing(why)) => {
                println!("SKIPPED: postgres: {why}");
                return;
            }
            Err(NoCluster::Failed(why)) => panic!("the cluster did not start: {why}"),
        };
        let url = cluster.url();
        assert!(url.starts_with("postgres://postgres@127.0.0.1:"), "{url}");
        // The server accepts connections on the port the URL names.
        assert!(std::net::TcpStream::connect(("127.0.0.1", cluster.port)).is_ok());
        let env = cluster.env();
        assert_eq!(env[0], (URL_VAR, url));
        if util::succeeds(Command::new("openssl").arg("version")) {
            let ca = &env
                .iter()
                .find(|(var, _)| *var == CA_VAR)
                .expect("TLS is on")
                .1;
            let pem = std::fs::read_to_string(ca).unwrap();
            assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
        }
        let dir = cluster.dir.clone();
        drop(cluster);
        assert!(!dir.exists(), "the cluster's folder is removed");
    }

    #[test]
    fn the_durable_cluster_restarts_through_its_script() {
        let cluster = match Cluster::start(Kind::Durable) {
            Ok(cluster) => cluster,
            Err(NoCluster::Missing(why)) => {
                println!("SKIPPED: postgres: {why}");
                return;
            }
            Err(NoCluster::Failed(why)) => panic!("the cluster did not start: {why}"),
        };
        let env = cluster.env();
        assert_eq!(env[0], (DURABLE_URL_VAR, cluster.url()));
        let restart = &env
            .iter()
            .find(|(var, _)| *var == DURABLE_RESTART_VAR)
            .unwrap()
            .1;
        let pid = || std::fs::read_to_string(cluster.dir.join("data/postmaster.pid")).unwrap();
        let before = pid();
        util::run(&mut Command::new(restart)).expect("the restart script works");
        assert_ne!(pid(), before, "a new server process");
        assert!(std::net::TcpStream::connect(("127.0.0.1", cluster.port)).is_ok());
    }
}
