//! A throwaway PostgreSQL cluster for the tests that need a real server (the `batch` crate's
//! PostgreSQL store).
//!
//! [`Cluster::start`] runs `initdb` into a fresh temporary folder, starts the server on a free
//! loopback port with trust authentication (nothing listens beyond 127.0.0.1), and
//! [`Cluster::url`] names it for the tests, which read it from [`URL_VAR`]. Dropping the
//! cluster stops the server and removes the folder, also when the tests failed. PostgreSQL
//! refuses to run as root, so as root the server runs as the `postgres` user (Debian's
//! package creates it), which then owns the folder.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util;

/// The variable the tests read the cluster's URL from.
pub(crate) const URL_VAR: &str = "BATCH_TEST_POSTGRES_URL";

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
    bin: PathBuf,
    dir: PathBuf,
    as_user: Option<&'static str>,
    port: u16,
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
    pub(crate) fn start() -> Result<Self, NoCluster> {
        let Some(bin) = find_bin(Path::new(DEBIAN_ROOT)) else {
            return Err(NoCluster::Missing(format!(
                "no PostgreSQL server binaries (initdb, pg_ctl) in {DEBIAN_ROOT}/*/bin or on \
                 PATH; {INSTALL_HINT}"
            )));
        };
        let as_user = is_root().then_some(SERVER_USER);
        let dir = std::env::temp_dir().join(format!("xtask-postgres-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|err| NoCluster::Failed(format!("create {}: {err}", dir.display())))?;
        let port = free_port().map_err(NoCluster::Failed)?;
        // From here on, dropping the cluster cleans up whatever was made.
        let cluster = Self {
            bin,
            dir,
            as_user,
            port,
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
        // Durability is worthless for a cluster thrown away after the run; speed is not.
        let server_options = format!(
            "-c listen_addresses=127.0.0.1 -p {port} -k {socket} -c max_connections=400 \
             -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        );
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
        Ok(cluster)
    }

    /// The cluster's connection URL.
    pub(crate) fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
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
        let cluster = match Cluster::start() {
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
        let dir = cluster.dir.clone();
        drop(cluster);
        assert!(!dir.exists(), "the cluster's folder is removed");
    }
}
