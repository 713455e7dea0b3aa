//! Errors: every failure is an [`Error`] carrying libcdt's status code, its constant name and
//! message (from `cdt_err_name` / `cdt_strerror`, so codes added to the C library are named
//! without a change here), and for failures found on the Rust side a detail.
use std::ffi::CStr;
use std::fmt;

use cdtypes_sys as sys;

/// `Result<T, cdtypes::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A libcdt status code with its name and message.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    code: i32,
    detail: Option<String>,
}

impl Error {
    /// The error of a libcdt status code (negative).
    pub fn from_code(code: i32) -> Self {
        Error { code, detail: None }
    }

    /// An error with the given code and a detail that says what was wrong.
    pub fn with_detail(code: i32, detail: impl Into<String>) -> Self {
        Error {
            code,
            detail: Some(detail.into()),
        }
    }

    /// `CDT_ERR_FRAME_MISMATCH`: the frame does not hold what the receiving type expects.
    pub(crate) fn mismatch(detail: impl Into<String>) -> Self {
        Self::with_detail(sys::CDT_ERR_FRAME_MISMATCH, detail)
    }

    /// The status code (`cdt_status`, negative).
    pub fn code(&self) -> i32 {
        self.code
    }

    /// The constant's name, e.g. `"CDT_ERR_TIMEOUT"` (`"CDT_ERR_USER"` for codes libcdt does
    /// not define).
    pub fn name(&self) -> &'static str {
        // SAFETY: cdt_err_name returns a static NUL-terminated string for every code
        unsafe { static_str(sys::cdt_err_name(self.code)) }
    }

    /// libcdt's message for the code, e.g. `"timed out"`.
    pub fn message(&self) -> &'static str {
        // SAFETY: cdt_strerror returns a static NUL-terminated string for every code
        unsafe { static_str(sys::cdt_strerror(self.code)) }
    }

    /// What the Rust side found wrong, when it found the error.
    pub fn detail(&self) -> Option<&str> {
        self.detail.as_deref()
    }

    /// `CDT_ERR_TIMEOUT`.
    pub fn is_timeout(&self) -> bool {
        self.code == sys::CDT_ERR_TIMEOUT
    }

    /// `CDT_ERR_PEER`: the peer is unreachable or gone.
    pub fn is_peer_gone(&self) -> bool {
        self.code == sys::CDT_ERR_PEER
    }

    /// `CDT_ERR_CANCELED`.
    pub fn is_canceled(&self) -> bool {
        self.code == sys::CDT_ERR_CANCELED
    }
}

/// # Safety
/// `p` is NULL or a NUL-terminated string that lives for the whole program.
unsafe fn static_str(p: *const std::os::raw::c_char) -> &'static str {
    if p.is_null() {
        return "";
    }
    CStr::from_ptr(p).to_str().unwrap_or("")
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.name(), self.code, self.message())?;
        if let Some(d) = &self.detail {
            write!(f, ": {d}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {}

/// `Ok(())` for `CDT_SUCCESS`, the error otherwise.
pub(crate) fn check(rc: std::os::raw::c_int) -> Result<()> {
    if rc == sys::CDT_SUCCESS {
        Ok(())
    } else {
        Err(Error::from_code(rc))
    }
}
