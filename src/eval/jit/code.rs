//! Compiled code as the rest of `jit` holds it: assembled in parts ([`Parts`]), mapped into
//! executable memory and entered ([`Mapped`]), and kept per build ([`Builds`]: a sweep's two
//! semantics at two widths, each compiled at first use). The forward and the reverse code
//! are held alike; only what they are compiled from and what they touch differ (`mod.rs`).

use std::sync::OnceLock;

use super::Frame;

/// Machine code assembled in parts, each at its final offset, before it is mapped.
#[derive(Default)]
pub(super) struct Parts {
    parts: Vec<Vec<u8>>,
    /// Where the next part goes (the length of the parts, and of any before them).
    len: usize,
}

impl Parts {
    /// No parts yet, the first to go at offset `at` (after code assembled elsewhere).
    pub fn starting_at(at: usize) -> Parts {
        Parts {
            parts: Vec::new(),
            len: at,
        }
    }

    /// Bytes so far: the offset of the next part.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn push(&mut self, part: Vec<u8>) {
        self.len += part.len();
        self.parts.push(part);
    }

    /// `other`'s parts after these (`other` was assembled from this one's end on).
    pub fn append(&mut self, other: Parts) {
        self.len = other.len;
        self.parts.extend(other.parts);
    }

    /// The code in executable memory (`None` where the system gives none). Each part is freed
    /// as soon as it is copied, so the code is not held twice: for a 100,000-step layout that
    /// was 12 MB more at the peak of a run.
    fn map(self) -> Option<memmap2::Mmap> {
        let mut map = memmap2::MmapMut::map_anon(self.len.max(1)).ok()?;
        let mut at = 0;
        for part in self.parts {
            map[at..at + part.len()].copy_from_slice(&part);
            at += part.len();
        }
        map.make_exec().ok()
    }
}

/// Machine code in executable memory, with where it is entered.
pub(super) struct Mapped {
    code: memmap2::Mmap,
    entry: usize,
}

impl Mapped {
    /// `parts` mapped (`None` where the system gives no executable memory), entered at offset
    /// `entry`.
    pub fn new(parts: Parts, entry: usize) -> Option<Mapped> {
        Some(Mapped {
            code: parts.map()?,
            entry,
        })
    }

    /// Runs the code from its entry on `frame`.
    ///
    /// # Safety
    /// The code at the entry must be a function of this signature, and `frame` must hold what
    /// it reads and writes.
    pub unsafe fn enter(&self, frame: &mut Frame) {
        // SAFETY: the entry is inside the mapping, and the caller guarantees the function's
        // signature and what it touches.
        unsafe {
            let f: unsafe extern "sysv64" fn(*mut Frame) =
                std::mem::transmute(self.code.as_ptr().add(self.entry));
            f(frame);
        }
    }
}

impl std::fmt::Debug for Mapped {
    /// Its size, not its bytes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} bytes", self.code.len())
    }
}

/// Whether this CPU runs the AVX2 build (`avx2`) or the AVX-512 one.
pub(super) fn supported(avx2: bool) -> bool {
    if avx2 {
        crate::cpu::avx2_fma()
    } else {
        crate::cpu::avx512()
    }
}

/// One sweep's builds by semantics and width, each compiled at first use (`None` where it
/// cannot be).
#[derive(Debug)]
pub(super) struct Builds<T>([OnceLock<Option<T>>; 4]);

impl<T> Default for Builds<T> {
    fn default() -> Self {
        Builds(Default::default())
    }
}

impl<T> Builds<T> {
    /// The build for one of the two semantics (`which`) at the AVX2 width (`avx2`) or the
    /// AVX-512 one, made by `compile` at the first call.
    pub fn get(&self, which: bool, avx2: bool, compile: impl FnOnce() -> Option<T>) -> Option<&T> {
        self.0[usize::from(which) + 2 * usize::from(avx2)]
            .get_or_init(compile)
            .as_ref()
    }
}
