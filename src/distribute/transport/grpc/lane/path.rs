//! Where a rank's lane socket lives, so that every peer on the machine can find it and no
//! one else can: a directory only this user may enter, and a file name made of the network
//! namespace and the rank's address.

use std::fs::DirBuilder;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::PathBuf;

use super::super::address::host_and_port;
use super::no_lane::NoLane;

/// The longest path a Unix socket address holds: `sun_path` is 108 bytes, NUL included.
const MAX_SOCKET_PATH_BYTES: usize = 107;

/// This user's directory of lane sockets, seen from this process's network namespace.
#[derive(Debug, Clone)]
pub(in crate::distribute::transport::grpc) struct LaneDirectory {
    dir: PathBuf,
    /// The inode of this process's network namespace: ranks in different namespaces of one
    /// machine each see their own loopback, and must not meet through the file system.
    namespace: u64,
}

impl LaneDirectory {
    /// `estimator-lanes-<uid>` in the temporary directory, created private (0700) if it is
    /// not there; the reason when it cannot be used.
    pub(in crate::distribute::transport::grpc) fn private() -> Result<Self, NoLane> {
        let proc_self = std::fs::metadata("/proc/self").map_err(NoLane::UserId)?;
        let uid = proc_self.uid();
        let namespace = std::fs::metadata("/proc/self/ns/net")
            .map_err(NoLane::Namespace)?
            .ino();
        let dir = std::env::temp_dir().join(format!("estimator-lanes-{uid}"));
        match DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(source) => {
                return Err(NoLane::Directory {
                    what: "create",
                    dir,
                    source,
                })
            }
        }
        // Whoever made it, it must be this user's alone, or another user could listen in
        // a rank's place (or read the token a rank presents).
        let made = match std::fs::symlink_metadata(&dir) {
            Ok(made) => made,
            Err(source) => {
                return Err(NoLane::Directory {
                    what: "read",
                    dir,
                    source,
                })
            }
        };
        if !made.is_dir() || made.uid() != uid || made.mode() & 0o077 != 0 {
            return Err(NoLane::NotPrivate {
                dir,
                uid,
                mode: made.mode() & 0o7777,
                owner: made.uid(),
            });
        }
        Ok(Self { dir, namespace })
    }

    /// The socket of the rank whose gRPC address is `address` ("host:port"); the reason
    /// when the address has no port or the path would be too long for a socket.
    pub(in crate::distribute::transport::grpc) fn socket_path(
        &self,
        address: &str,
    ) -> Result<PathBuf, NoLane> {
        let (host, port) = host_and_port(address).map_err(NoLane::Address)?;
        // The host keeps 127.0.0.1:5000 and [::1]:5000 apart; anything but the characters
        // of an IP or a host name is dropped from the file name.
        let host: String = host
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '-'))
            .map(|c| c.to_ascii_lowercase())
            .collect();
        let path = self.dir.join(format!("{}-{host}-{port}", self.namespace));
        if path.as_os_str().len() > MAX_SOCKET_PATH_BYTES {
            return Err(NoLane::PathTooLong {
                path,
                max: MAX_SOCKET_PATH_BYTES,
            });
        }
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_is_private_and_paths_name_the_namespace_host_and_port() {
        let lanes = LaneDirectory::private().unwrap();
        let mode = std::fs::metadata(&lanes.dir).unwrap().mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
        let path = lanes.socket_path("127.0.0.1:5000").unwrap();
        let name = path.file_name().unwrap().to_str().unwrap();
        assert_eq!(name, format!("{}-127.0.0.1-5000", lanes.namespace));
        let v6 = lanes.socket_path("[::1]:5000").unwrap();
        assert_ne!(path, v6);
        assert_eq!(
            lanes.socket_path("LOCALHOST:7").unwrap().parent(),
            path.parent()
        );
        assert!(lanes.socket_path("127.0.0.1").is_err());
        let deep = LaneDirectory {
            dir: PathBuf::from("/").join("d".repeat(100)),
            ..lanes
        };
        let err = deep.socket_path("127.0.0.1:5000").unwrap_err();
        assert!(matches!(err, NoLane::PathTooLong { .. }), "{err}");
        assert!(
            err.to_string().contains("longer than a Unix socket path"),
            "{err}"
        );
    }
}
