//! Data files: how the compiler finds them (a [`Resolver`], so that built-in models carry
//! their data inside the binary) and how a column of a CSV file becomes numbers.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::CompileOptions;
use super::diagnostic::clip;
use crate::input::{InputError, Links, check_regular, open_input, read_capped};

/// Reads the files a model refers to, by the path written in the model.
pub trait Resolver {
    /// The text of the file at `path` (relative to the model), or why it cannot be read.
    fn read(&self, path: &str) -> Result<String, String>;
}

/// Files on disk, relative to the model's directory.
///
/// A model may come from someone else, so by default it reads only regular files inside its
/// own directory or a data directory the user named, and at most `max_bytes` of them:
/// `csv("/etc/passwd", ..)`, `/dev/zero` or a FIFO are refused before anything is read.
///
/// A file is opened once and the opened file is checked: a path that names a place outside
/// (`..`, an absolute path) is refused before the disk is touched; otherwise the path is
/// opened (without blocking), and the file opened must be the one the path resolves to
/// inside an allowed directory (same device and inode), so swapping a link between the check
/// and the read cannot make a model read data from outside. Messages name the path as the
/// model wrote it, never the target of a link.
#[derive(Clone, Debug)]
pub struct FsResolver {
    /// The directory relative paths are read from (the model file's).
    pub base_dir: PathBuf,
    /// Directories besides `base_dir` files may be read from.
    pub data_dirs: Vec<PathBuf>,
    /// Read files anywhere (`--allow-data-outside`).
    pub allow_outside: bool,
    /// Largest file read, in bytes.
    pub max_bytes: u64,
}

/// Bytes of a data file that count as one compilation step when it is read, and again when
/// a column of it is parsed (about a microsecond of work, as a lowering step).
pub(crate) const BYTES_PER_STEP: usize = 256;

/// The longest path opened, in bytes (Linux's `PATH_MAX`): a longer one names no file.
const MAX_PATH_BYTES: usize = 4096;

/// The longest path quoted in a message, in characters.
const SHOWN_PATH_CHARS: usize = 200;

impl FsResolver {
    /// Files relative to `base_dir`, under the data policy of `opts`.
    pub fn new(base_dir: &Path, opts: &CompileOptions) -> FsResolver {
        FsResolver {
            base_dir: base_dir.to_path_buf(),
            data_dirs: opts.data_dirs.clone(),
            allow_outside: opts.allow_data_outside,
            max_bytes: opts.max_data_bytes,
        }
    }

    fn base(&self) -> &Path {
        if self.base_dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.base_dir
        }
    }

    /// The directories files may be read from: the model's and the data directories.
    fn roots(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.base()).chain(self.data_dirs.iter().map(PathBuf::as_path))
    }

    /// The allowed directories with every link resolved.
    fn canonical_roots(&self) -> Vec<PathBuf> {
        self.roots().filter_map(|d| d.canonicalize().ok()).collect()
    }

    /// Why a path may not be read: it names a place outside every allowed directory.
    fn outside(&self, how: &str) -> String {
        format!(
            "it {how} the model's directory `{}`; a model reads only data beside it unless \
             allowed with `--allow-data-outside` or `--data-dir DIR`",
            self.base().display()
        )
    }

    /// Opens `path` (relative to the model) under the policy: inside an allowed directory
    /// unless reading anywhere is allowed.
    fn open(&self, path: &str) -> Result<File, String> {
        if path.len() > MAX_PATH_BYTES {
            return Err(format!(
                "the path is {} bytes long, longer than any file's ({MAX_PATH_BYTES} at most)",
                path.len()
            ));
        }
        let full = self.base().join(path);
        let confined = !self.allow_outside;
        if confined {
            // Refused by its text alone, so an error never tells whether a file outside
            // exists.
            let lexical = lexically_absolute(&full);
            let inside = self.roots().any(|r| {
                lexical.starts_with(lexically_absolute(r))
                    || r.canonicalize().is_ok_and(|c| lexical.starts_with(c))
            });
            if !inside {
                return Err(self.outside("is outside"));
            }
            // Where a link leads outside, nothing is opened there (opening a device can do
            // something); the check after opening is the one that holds under a race.
            if full
                .canonicalize()
                .is_ok_and(|real| !self.canonical_roots().iter().any(|r| real.starts_with(r)))
            {
                return Err(self.outside("leads outside"));
            }
        }
        let file = match open_input(&full, Links::Follow) {
            Ok(f) => f,
            Err(_) if confined && through_link(self.base(), path) => {
                // A link to nothing readable: said as for a link out, which it may be.
                return Err(self.outside("leads outside"));
            }
            Err(InputError::Io { source, .. }) => return Err(source.to_string()),
            Err(_) => return Err("it is not a regular file".to_string()),
        };
        if confined && !self.opened_inside(&file, &full) {
            return Err(self.outside("leads outside"));
        }
        check_regular(&file, Path::new(path))
            .map_err(|_| "it is not a regular file".to_string())?;
        Ok(file)
    }

    /// Whether the opened `file` is the file `full` resolves to inside an allowed directory
    /// (compared by device and inode, so a link swapped after the open is caught).
    fn opened_inside(&self, file: &File, full: &Path) -> bool {
        let Ok(real) = full.canonicalize() else {
            return false;
        };
        if !self.canonical_roots().iter().any(|r| real.starts_with(r)) {
            return false;
        }
        match (file.metadata(), std::fs::metadata(&real)) {
            (Ok(opened), Ok(named)) => same_file(&opened, &named),
            _ => false,
        }
    }
}

/// Whether two metadata describe the same file.
#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// Whether two metadata describe the same file (where there are no inode numbers: the same
/// kind and length).
#[cfg(not(unix))]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    a.file_type() == b.file_type() && a.len() == b.len()
}

/// `path` made absolute and with `.` and `..` removed by its text alone (no link resolved).
fn lexically_absolute(path: &Path) -> PathBuf {
    use std::path::Component;
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Whether `path` (relative to `base`) passes through a symbolic link.
fn through_link(base: &Path, path: &str) -> bool {
    let mut at = base.to_path_buf();
    Path::new(path).components().any(|c| {
        at.push(c);
        std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink())
    })
}

fn too_large(max: u64) -> String {
    format!(
        "it is larger than {max} bytes, the most a data file may be (raise it with \
         `--max-data-bytes`)"
    )
}

impl Resolver for FsResolver {
    fn read(&self, path: &str) -> Result<String, String> {
        let file = self.open(path)?;
        let bytes = read_capped(file, self.max_bytes, Path::new(path)).map_err(|e| match e {
            InputError::TooLarge { .. } => too_large(self.max_bytes),
            InputError::Io { source, .. } => source.to_string(),
            InputError::NotRegular { .. } => "it is not a regular file".to_string(),
        })?;
        String::from_utf8(bytes).map_err(|e| {
            format!(
                "it is not text (byte {} is not UTF-8)",
                e.utf8_error().valid_up_to()
            )
        })
    }
}

/// Why a column could not be read.
pub(crate) struct DataError {
    pub message: String,
    pub expected: String,
    /// The file was read but has no such column (the error points at the column name).
    pub missing_column: bool,
}

/// The text of the data file `path` (as written in the model).
pub(crate) fn read_data_file(resolver: &dyn Resolver, path: &str) -> Result<String, DataError> {
    resolver.read(path).map_err(|e| DataError {
        message: format!(
            "cannot read data file `{}`: {e}",
            clip(path, SHOWN_PATH_CHARS)
        ),
        expected: "a CSV file beside the model (the path is relative to the model file)"
            .to_string(),
        missing_column: false,
    })
}

/// The numbers in column `column` of `text`, the CSV file `path` (with a header row).
///
/// The file is bounded by `--max-data-bytes`, so the column is too (its numbers are held
/// packed, not as IR nodes). Nothing of the file's text is quoted in an error unless it looks
/// like a CSV header or a number: a model must not be able to print a file that is not its
/// data.
pub(crate) fn parse_column(text: &str, path: &str, column: &str) -> Result<Vec<f64>, DataError> {
    // The model's strings are quoted back cut short: a 60 MB path must not print whole.
    let column_given = column;
    let path = &clip(path, SHOWN_PATH_CHARS);
    let column = &clip(column_given, SHOWN_PATH_CHARS);
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let bad = |message: String| DataError {
        message,
        expected: "a CSV file with a header row and numbers below it".to_string(),
        missing_column: false,
    };
    let headers = reader
        .headers()
        .map_err(|e| bad(format!("`{path}` is not a valid CSV file: {e}")))?
        .clone();
    let Some(col) = headers.iter().position(|h| h == column_given) else {
        let names: Vec<&str> = headers.iter().collect();
        let expected = if names.len() <= 100 && names.iter().all(|n| looks_like_name(n)) {
            format!("one of its columns: {}", names.join(", "))
        } else {
            "the name of one of its columns (its header row does not look like a CSV header)"
                .to_string()
        };
        return Err(DataError {
            message: format!("`{path}` has no column `{column}`"),
            expected,
            missing_column: true,
        });
    };
    let mut out = Vec::new();
    let mut record = csv::StringRecord::new();
    for row in 0.. {
        let more = reader
            .read_record(&mut record)
            .map_err(|e| bad(format!("`{path}` is not a valid CSV file: {e}")))?;
        if !more {
            break;
        }
        let field = record.get(col).unwrap_or("");
        let x: f64 = field.parse().map_err(|_| {
            let shown = if looks_like_name(field) {
                format!("`{field}`")
            } else {
                "the field".to_string()
            };
            bad(format!(
                "`{path}`, row {} of column `{column}`: {shown} is not a number",
                row + 2
            ))
        })?;
        out.push(x);
    }
    Ok(out)
}

/// Whether a header or field is short, printable text (a column name or a mistyped number)
/// that may be quoted back.
fn looks_like_name(s: &str) -> bool {
    s.len() <= 40
        && s.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ' ' | '+'))
}
