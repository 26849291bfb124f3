//! Data files: how the compiler finds them (a [`Resolver`], so that built-in models carry
//! their data inside the binary) and how a column of a CSV file becomes numbers.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::CompileOptions;

/// Reads the files a model refers to, by the path written in the model.
pub trait Resolver {
    /// The text of the file at `path` (relative to the model), or why it cannot be read.
    fn read(&self, path: &str) -> Result<String, String>;
}

/// Files on disk, relative to the model's directory.
///
/// A model may come from someone else, so by default it reads only regular files inside its
/// own directory (after resolving `..` and symbolic links) or a data directory the user
/// named, and at most `max_bytes` of them: `csv("/etc/passwd", ..)`, `/dev/zero` or a FIFO
/// are refused before anything is read.
#[derive(Clone, Debug)]
pub struct FsResolver {
    pub base_dir: PathBuf,
    /// Directories besides `base_dir` files may be read from.
    pub data_dirs: Vec<PathBuf>,
    /// Read files anywhere (`--allow-data-outside`).
    pub allow_outside: bool,
    /// Largest file read, in bytes.
    pub max_bytes: u64,
}

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

    /// The resolved path of `path` if the policy allows reading it.
    fn allowed(&self, path: &str) -> Result<PathBuf, String> {
        let base = if self.base_dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.base_dir
        };
        let full = base.join(path);
        let real = full
            .canonicalize()
            .map_err(|e| format!("{e} ({})", full.display()))?;
        if !self.allow_outside {
            let roots: Vec<PathBuf> = std::iter::once(base)
                .chain(self.data_dirs.iter().map(PathBuf::as_path))
                .filter_map(|d| d.canonicalize().ok())
                .collect();
            if !roots.iter().any(|r| real.starts_with(r)) {
                return Err(format!(
                    "it resolves to `{}`, outside the model's directory `{}`; a model reads \
                     only data beside it unless allowed with `--allow-data-outside` or \
                     `--data-dir DIR`",
                    real.display(),
                    base.display()
                ));
            }
        }
        let meta = std::fs::metadata(&real).map_err(|e| format!("{e} ({})", real.display()))?;
        if !meta.is_file() {
            return Err(format!("`{}` is not a regular file", real.display()));
        }
        if meta.len() > self.max_bytes {
            return Err(too_large(&real, self.max_bytes));
        }
        Ok(real)
    }
}

fn too_large(path: &Path, max: u64) -> String {
    format!(
        "`{}` is larger than {max} bytes, the most a data file may be (raise it with \
         `--max-data-bytes`)",
        path.display()
    )
}

impl Resolver for FsResolver {
    fn read(&self, path: &str) -> Result<String, String> {
        let real = self.allowed(path)?;
        let file = std::fs::File::open(&real).map_err(|e| format!("{e} ({})", real.display()))?;
        // The size was checked, but a file can grow (or be a /proc file of size 0).
        let mut bytes = Vec::new();
        file.take(self.max_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| format!("{e} ({})", real.display()))?;
        if bytes.len() as u64 > self.max_bytes {
            return Err(too_large(&real, self.max_bytes));
        }
        String::from_utf8(bytes).map_err(|e| {
            format!(
                "`{}` is not text (byte {} is not UTF-8)",
                real.display(),
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

/// The numbers in column `column` of the CSV file `path` (with a header row).
///
/// At most `max_rows` numbers are read (the node and step limits left). Nothing of the file's
/// text is quoted in an error unless it looks like a CSV header or a number: a model must not
/// be able to print a file that is not its data.
pub(crate) fn read_column(
    resolver: &dyn Resolver,
    path: &str,
    column: &str,
    max_rows: usize,
) -> Result<Vec<f64>, DataError> {
    let text = resolver.read(path).map_err(|e| DataError {
        message: format!("cannot read data file `{path}`: {e}"),
        expected: "a CSV file beside the model (the path is relative to the model file)"
            .to_string(),
        missing_column: false,
    })?;
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
    let Some(col) = headers.iter().position(|h| h == column) else {
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
        if out.len() >= max_rows {
            return Err(DataError {
                message: format!(
                    "`{path}`, column `{column}` has more than {max_rows} rows, more than the \
                     node and step limits leave (raise them with `--max-nodes` and `--max-steps`)"
                ),
                expected: "a smaller data file".to_string(),
                missing_column: false,
            });
        }
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
