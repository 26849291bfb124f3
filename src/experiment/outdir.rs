//! An output directory that one run of `reproduce` owns while it writes: checked before any
//! work, locked against a second writer, cleared of an interrupted writer's temporary files,
//! and given a manifest of the files this run wrote (so that stale files of an earlier sweep
//! in the same directory are not mistaken for this one's).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::atomic::{remove_leftover_temps, write_atomic};

/// The lock file's name inside the output directory.
pub const LOCK_FILE: &str = ".dsgd-reproduce.lock";
/// The manifest's name inside the output directory.
pub const MANIFEST_FILE: &str = "manifest.json";

/// Why an output directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OutDirError {
    /// The path exists and is not a directory.
    #[error("`{0}` exists and is not a directory (--out must name a directory)")]
    NotADirectory(PathBuf),
    #[error(
        "another `dsgd reproduce` (process {pid}) is writing to `{dir}`; wait for it or choose \
         another --out (if no such run is going on, delete `{lock}`)"
    )]
    /// Another reproduction holds the directory's lock.
    Locked {
        /// The directory.
        dir: PathBuf,
        /// The process that holds the lock, as the lock file says.
        pid: String,
        /// The lock file.
        lock: PathBuf,
    },
    /// A file or directory could not be written.
    #[error("cannot write to `{path}`")]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> OutDirError + '_ {
    move |source| OutDirError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// An output directory held for writing; the lock is released on drop.
#[derive(Debug)]
pub struct OutDir {
    dir: PathBuf,
    lock: PathBuf,
    written: Vec<PathBuf>,
}

impl OutDir {
    /// Creates `dir` if needed, proves it writable by creating the lock file in it (refusing
    /// if another live process holds it), and deletes temporary files left by an interrupted
    /// writer.
    pub fn acquire(dir: &Path) -> Result<OutDir, OutDirError> {
        if dir.exists() && !dir.is_dir() {
            return Err(OutDirError::NotADirectory(dir.to_path_buf()));
        }
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let lock = dir.join(LOCK_FILE);
        let mut stale_once = false;
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&lock)
            {
                Ok(mut f) => {
                    writeln!(f, "{}", std::process::id()).map_err(io(&lock))?;
                    break;
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let pid = lock_holder(&lock);
                    if !stale_once && holder_is_gone(&pid) {
                        // A crashed run's lock: take it over, once.
                        stale_once = true;
                        let _ = std::fs::remove_file(&lock);
                        continue;
                    }
                    return Err(OutDirError::Locked {
                        dir: dir.to_path_buf(),
                        pid: if pid.is_empty() {
                            "unknown".into()
                        } else {
                            pid
                        },
                        lock,
                    });
                }
                Err(e) => return Err(io(dir)(e)),
            }
        }
        let out = OutDir {
            dir: dir.to_path_buf(),
            lock,
            written: Vec::new(),
        };
        remove_leftover_temps(dir).map_err(io(dir))?;
        Ok(out)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Records files this run wrote (for the manifest).
    pub fn wrote(&mut self, files: impl IntoIterator<Item = PathBuf>) {
        self.written.extend(files);
    }

    /// Writes `manifest.json`: the files this run wrote, relative to the directory, sorted.
    pub fn write_manifest(&mut self) -> Result<PathBuf, OutDirError> {
        #[derive(Serialize)]
        struct Manifest {
            /// Written by this version of dsgd.
            version: &'static str,
            files: Vec<String>,
        }
        let mut files: Vec<String> = self
            .written
            .iter()
            .map(|p| {
                p.strip_prefix(&self.dir)
                    .unwrap_or(p)
                    .to_string_lossy()
                    .replace('\\', "/")
            })
            .collect();
        files.sort();
        files.dedup();
        let path = self.dir.join(MANIFEST_FILE);
        let json = serde_json::to_string_pretty(&Manifest {
            version: env!("CARGO_PKG_VERSION"),
            files,
        })
        .map_err(|e| io(&path)(std::io::Error::other(e)))?;
        write_atomic(&path, json.as_bytes()).map_err(io(&path))?;
        Ok(path)
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.lock);
    }
}

/// The process id written in a lock file, or `""` when it holds none: read without following
/// a link, only from a regular file, at most a few bytes, and never quoted back unless it is
/// a number (a lock planted as a link to `/etc/passwd`, `/dev/zero` or a FIFO is read as
/// no process).
fn lock_holder(lock: &Path) -> String {
    use crate::input::{Links, read_file};
    let Ok(bytes) = read_file(lock, Links::Refuse, 32) else {
        return String::new();
    };
    std::str::from_utf8(&bytes)
        .ok()
        .and_then(|t| t.trim().parse::<u32>().ok())
        .map_or(String::new(), |pid| pid.to_string())
}

/// Whether the process named in a lock file has certainly ended (Linux: no `/proc/PID`).
/// Where that cannot be told, the lock is respected.
fn holder_is_gone(pid: &str) -> bool {
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    Path::new("/proc/self").exists() && !Path::new(&format!("/proc/{pid}")).exists()
}
