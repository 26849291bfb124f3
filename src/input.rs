//! Reading an input file the way a trusted tool reads untrusted input: opened once, without
//! blocking (a FIFO with no writer would hang `open`), checked on the opened handle to be a
//! regular file (not `/dev/zero`, a FIFO or a directory), and read through a size cap (at most
//! `cap + 1` bytes), so a file that grows while it is read is refused, not followed.
//!
//! Every file the command line and the Python package read (model files, `--data`, a run's
//! `run.json`, data files of `csv(..)`) comes through here. Errors name the path as given,
//! never the target of a link.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Why an input file was not read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file could not be opened or read.
    #[error("cannot read `{}`: {source}", path.display())]
    Io {
        /// The path as given.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// A device, FIFO, socket or directory.
    #[error("`{}` is not a regular file", path.display())]
    NotRegular {
        /// The path as given.
        path: PathBuf,
    },
    /// Larger than the cap.
    #[error("`{}` is larger than {cap} bytes", path.display())]
    TooLarge {
        /// The path as given.
        path: PathBuf,
        /// The cap, in bytes.
        cap: u64,
    },
}

impl InputError {
    /// Whether the file does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, InputError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

/// How a file is opened.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Links {
    /// A symbolic link as the last component is followed.
    Follow,
    /// A symbolic link as the last component is refused (`O_NOFOLLOW`).
    Refuse,
}

/// Opens `path` for reading without blocking and checks on the opened handle that it is a
/// regular file.
pub fn open_regular(path: &Path, links: Links) -> Result<File, InputError> {
    let file = open_input(path, links)?;
    check_regular(&file, path)?;
    Ok(file)
}

/// Opens `path` for reading without blocking (a FIFO opens at once) and without checking
/// what it is: call [`check_regular`] before reading.
pub fn open_input(path: &Path, links: Links) -> Result<File, InputError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Non-blocking: opening a FIFO for reading would wait for a writer.
        let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC;
        if links == Links::Refuse {
            flags |= libc::O_NOFOLLOW;
        }
        options.custom_flags(flags);
    }
    #[cfg(not(unix))]
    if links == Links::Refuse
        && std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(InputError::NotRegular {
            path: path.to_path_buf(),
        });
    }
    let file = options.open(path).map_err(|source| {
        #[cfg(unix)]
        if links == Links::Refuse && source.raw_os_error() == Some(libc::ELOOP) {
            // O_NOFOLLOW met a link.
            return InputError::NotRegular {
                path: path.to_path_buf(),
            };
        }
        InputError::Io {
            path: path.to_path_buf(),
            source,
        }
    })?;
    Ok(file)
}

/// Refuses an opened handle that is not a regular file.
pub fn check_regular(file: &File, path: &Path) -> Result<(), InputError> {
    let meta = file.metadata().map_err(|source| InputError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if meta.is_file() {
        Ok(())
    } else {
        Err(InputError::NotRegular {
            path: path.to_path_buf(),
        })
    }
}

/// Reads an opened file through a cap of `cap` bytes (`path` names it in errors).
pub fn read_capped(file: File, cap: u64, path: &Path) -> Result<Vec<u8>, InputError> {
    let io = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    let len = file.metadata().map_err(io)?.len();
    if len > cap {
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            cap,
        });
    }
    // The size was checked, but a file can grow (or be a /proc file of size 0).
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0).saturating_add(1));
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > cap {
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            cap,
        });
    }
    Ok(bytes)
}

/// The bytes of the regular file at `path`, at most `cap` of them.
pub fn read_file(path: &Path, links: Links, cap: u64) -> Result<Vec<u8>, InputError> {
    read_capped(open_regular(path, links)?, cap, path)
}

/// [`read_file`] as UTF-8 text (an invalid byte is reported with its offset).
pub fn read_text(path: &Path, links: Links, cap: u64) -> Result<String, InputError> {
    String::from_utf8(read_file(path, links, cap)?).map_err(|e| InputError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "byte {} is not UTF-8: not a text file",
                e.utf8_error().valid_up_to()
            ),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tempdir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("dsgd-input-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_regular_file_is_read_whole_and_a_larger_one_refused() {
        let d = tempdir("cap");
        let f = d.join("a.txt");
        std::fs::write(&f, "12345").unwrap();
        assert_eq!(read_file(&f, Links::Follow, 5).unwrap(), b"12345");
        let e = read_file(&f, Links::Follow, 4).unwrap_err();
        assert!(matches!(e, InputError::TooLarge { cap: 4, .. }), "{e}");
        assert!(
            read_file(&d.join("missing"), Links::Follow, 9)
                .unwrap_err()
                .is_not_found()
        );
        let e = read_file(&d, Links::Follow, 9).unwrap_err();
        assert!(matches!(e, InputError::NotRegular { .. }), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn devices_fifos_and_refused_links_are_not_read() {
        let d = tempdir("special");
        // /dev/zero would grow without bound if read.
        let e = read_file(Path::new("/dev/zero"), Links::Follow, 1 << 20).unwrap_err();
        assert!(matches!(e, InputError::NotRegular { .. }), "{e}");
        // A FIFO without a writer would block `open` for ever.
        let fifo = d.join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let e = read_file(&fifo, Links::Follow, 10).unwrap_err();
            assert!(matches!(e, InputError::NotRegular { .. }), "{e}");
        }
        // A link is followed or refused as asked, and the error names the link.
        std::fs::write(d.join("target"), "x").unwrap();
        std::os::unix::fs::symlink(d.join("target"), d.join("link")).unwrap();
        assert_eq!(read_file(&d.join("link"), Links::Follow, 10).unwrap(), b"x");
        let e = read_file(&d.join("link"), Links::Refuse, 10).unwrap_err();
        assert!(matches!(e, InputError::NotRegular { .. }), "{e}");
        assert!(e.to_string().contains("link"), "{e}");
        assert!(!e.to_string().contains("target"), "{e}");
    }
}
