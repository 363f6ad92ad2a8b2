//! GGUF header validation, done in Rust before llama.cpp ever sees a file.
//!
//! llama.cpp trusts its input in places (some malformed files abort the
//! process), so we parse the header and tensor table ourselves and check that
//! every tensor's data lies inside the file. This turns "not a model",
//! "truncated download" and "wrong file" into ordinary errors. Written by hand
//! because the format is small and stable, and the GGUF crates on crates.io
//! either load the tensors or lag the spec; type sizes come from ggml itself.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use serde::Serialize;

/// What the header tells us about a model, for `agent models` and `doctor`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GgufInfo {
    pub version: u32,
    pub tensor_count: u64,
    pub architecture: Option<String>,
    pub name: Option<String>,
    pub context_length: Option<u64>,
    pub has_chat_template: bool,
    pub file_size: u64,
    /// Repeating layers (`ARCH.block_count`).
    pub layers: Option<u64>,
    /// K and V bytes per token over all layers at f16, from the attention
    /// shape; what the context window costs in memory.
    pub kv_bytes_per_token: Option<u64>,
    /// Weights over all tensors (what `llama_model_n_params` counts once
    /// loaded), read from the tensor table without loading the model.
    pub parameters: u64,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum GgufError {
    #[error("cannot read the file: {0}")]
    Io(String),
    #[error("not a GGUF file (the first bytes are not `GGUF`)")]
    BadMagic,
    #[error("unsupported GGUF version {0} (supported: 2 and 3)")]
    UnsupportedVersion(u32),
    #[error("the file is truncated or corrupt: {0}")]
    Corrupt(String),
}

const GGUF_TYPE_STRING: u32 = 8;
const GGUF_TYPE_ARRAY: u32 = 9;

struct Reader<R> {
    inner: R,
    file_size: u64,
}

impl<R: Read + Seek> Reader<R> {
    fn bytes<const N: usize>(&mut self) -> Result<[u8; N], GgufError> {
        let mut buf = [0u8; N];
        self.inner
            .read_exact(&mut buf)
            .map_err(|_| GgufError::Corrupt("unexpected end of file in the header".into()))?;
        Ok(buf)
    }
    fn u32(&mut self) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.bytes()?))
    }
    fn u64(&mut self) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.bytes()?))
    }
    fn pos(&mut self) -> Result<u64, GgufError> {
        self.inner
            .stream_position()
            .map_err(|e| GgufError::Io(e.to_string()))
    }
    /// A count or length that must fit in what is left of the file.
    fn bounded(&mut self, n: u64, what: &str) -> Result<u64, GgufError> {
        let left = self.file_size.saturating_sub(self.pos()?);
        if n > left {
            return Err(GgufError::Corrupt(format!(
                "{what} of {n} exceeds the file size"
            )));
        }
        Ok(n)
    }
    fn string(&mut self) -> Result<String, GgufError> {
        let len = self.u64()?;
        let len = self.bounded(len, "string length")?;
        let mut buf = vec![0u8; len as usize];
        self.inner
            .read_exact(&mut buf)
            .map_err(|_| GgufError::Corrupt("unexpected end of file in a string".into()))?;
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }
    fn skip(&mut self, n: u64) -> Result<(), GgufError> {
        let n = self.bounded(n, "value")?;
        self.inner
            .seek(SeekFrom::Current(n as i64))
            .map_err(|e| GgufError::Io(e.to_string()))?;
        Ok(())
    }
    /// Reads a scalar as u64 when it is an integer, skips it otherwise.
    fn value(&mut self, ty: u32) -> Result<Value, GgufError> {
        Ok(match ty {
            0 | 1 | 7 => Value::Int(self.bytes::<1>()?[0] as u64),
            2 | 3 => Value::Int(u16::from_le_bytes(self.bytes()?) as u64),
            4 | 5 => Value::Int(self.u32()? as u64),
            10 | 11 => Value::Int(self.u64()?),
            6 => {
                self.skip(4)?;
                Value::Other
            }
            12 => {
                self.skip(8)?;
                Value::Other
            }
            GGUF_TYPE_STRING => Value::Str(self.string()?),
            GGUF_TYPE_ARRAY => {
                let item_ty = self.u32()?;
                let count = self.u64()?;
                self.bounded(count, "array length")?;
                match scalar_size(item_ty) {
                    Some(size) => self.skip(count.saturating_mul(size))?,
                    None if item_ty == GGUF_TYPE_STRING => {
                        for _ in 0..count {
                            let len = self.u64()?;
                            self.skip(len)?;
                        }
                    }
                    None => {
                        return Err(GgufError::Corrupt(format!("bad array item type {item_ty}")))
                    }
                }
                Value::Other
            }
            other => return Err(GgufError::Corrupt(format!("unknown metadata type {other}"))),
        })
    }
}

enum Value {
    Int(u64),
    Str(String),
    Other,
}

fn scalar_size(ty: u32) -> Option<u64> {
    match ty {
        0 | 1 | 7 => Some(1),
        2 | 3 => Some(2),
        4..=6 => Some(4),
        10..=12 => Some(8),
        _ => None,
    }
}

/// Bytes of one tensor, or None for a type ggml does not know.
fn tensor_bytes(ggml_type: u32, dims: &[u64]) -> Option<u64> {
    if ggml_type >= llama_cpp_sys_2::GGML_TYPE_COUNT {
        return None;
    }
    // SAFETY: both functions only index ggml's static type table, and the
    // type was bounds-checked above.
    let (block, type_size) = unsafe {
        (
            llama_cpp_sys_2::ggml_blck_size(ggml_type),
            llama_cpp_sys_2::ggml_type_size(ggml_type),
        )
    };
    if block <= 0 || type_size == 0 {
        return None; // a type removed from ggml
    }
    let elements = dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))?;
    Some(elements / block as u64 * type_size as u64)
}

/// Validates a GGUF file's header and tensor table against its size.
pub fn inspect(path: &Path) -> Result<GgufInfo, GgufError> {
    let file = File::open(path).map_err(|e| GgufError::Io(e.to_string()))?;
    let file_size = file
        .metadata()
        .map_err(|e| GgufError::Io(e.to_string()))?
        .len();
    let mut r = Reader {
        inner: BufReader::new(file),
        file_size,
    };
    let magic = r.bytes::<4>().map_err(|_| GgufError::BadMagic)?;
    if &magic != b"GGUF" {
        return Err(GgufError::BadMagic);
    }
    let version = r.u32()?;
    if !(2..=3).contains(&version) {
        return Err(GgufError::UnsupportedVersion(version));
    }
    let tensor_count = r.u64()?;
    let kv_count = r.u64()?;
    r.bounded(tensor_count, "tensor count")?;
    r.bounded(kv_count, "metadata count")?;

    let mut info = GgufInfo {
        version,
        tensor_count,
        architecture: None,
        name: None,
        context_length: None,
        has_chat_template: false,
        file_size,
        layers: None,
        kv_bytes_per_token: None,
        parameters: 0,
    };
    let mut alignment = 32u64;
    // Architecture-prefixed integers (`llama.block_count`, ...): the prefix
    // is known only once `general.architecture` has been read.
    let mut arch_ints = Vec::new();
    for _ in 0..kv_count {
        let key = r.string()?;
        let ty = r.u32()?;
        match (key.as_str(), r.value(ty)?) {
            ("general.architecture", Value::Str(s)) => info.architecture = Some(s),
            ("general.name", Value::Str(s)) => info.name = Some(s),
            ("general.alignment", Value::Int(a)) => alignment = a,
            ("tokenizer.chat_template", _) => info.has_chat_template = true,
            (k, Value::Int(n)) if !k.starts_with("general.") => arch_ints.push((k.to_string(), n)),
            _ => {}
        }
    }
    if alignment == 0 || !alignment.is_power_of_two() {
        return Err(GgufError::Corrupt(format!("bad alignment {alignment}")));
    }
    if let Some(arch) = &info.architecture {
        let get = |name: &str| {
            let key = format!("{arch}.{name}");
            arch_ints.iter().find(|(k, _)| *k == key).map(|(_, n)| *n)
        };
        info.context_length = get("context_length");
        info.layers = get("block_count");
        info.kv_bytes_per_token = (|| {
            let heads = get("attention.head_count")?.max(1);
            // Per-layer arrays (some hybrid models) are not read: assume MHA.
            let kv_heads = get("attention.head_count_kv").unwrap_or(heads);
            let head_dim = get("embedding_length")? / heads;
            let k = get("attention.key_length").unwrap_or(head_dim);
            let v = get("attention.value_length").unwrap_or(head_dim);
            Some(info.layers? * kv_heads * (k + v) * 2)
        })();
    }

    let mut ends = Vec::with_capacity(tensor_count as usize);
    for _ in 0..tensor_count {
        let name = r.string()?;
        let n_dims = r.u32()?;
        if n_dims == 0 || n_dims > 4 {
            return Err(GgufError::Corrupt(format!(
                "tensor {name} has {n_dims} dimensions"
            )));
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            dims.push(r.u64()?);
        }
        let ggml_type = r.u32()?;
        let offset = r.u64()?;
        let bytes = tensor_bytes(ggml_type, &dims).ok_or_else(|| {
            GgufError::Corrupt(format!("tensor {name} has unknown type {ggml_type}"))
        })?;
        let elements = dims.iter().fold(1u64, |acc, &d| acc.saturating_mul(d));
        info.parameters = info.parameters.saturating_add(elements);
        ends.push((name, offset.saturating_add(bytes)));
    }
    let header_end = r.pos()?;
    let data_start = header_end.div_ceil(alignment) * alignment;
    let data_size = file_size.saturating_sub(data_start);
    if let Some((name, end)) = ends.iter().find(|(_, end)| *end > data_size) {
        return Err(GgufError::Corrupt(format!(
            "tensor {name} ends at byte {} but the file has {file_size} bytes (incomplete download?)",
            data_start + end
        )));
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gguf_bytes(truncate_data: bool) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(b"GGUF");
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&1u64.to_le_bytes()); // tensors
        b.extend_from_slice(&1u64.to_le_bytes()); // kv
        let key = b"general.architecture";
        b.extend_from_slice(&(key.len() as u64).to_le_bytes());
        b.extend_from_slice(key);
        b.extend_from_slice(&GGUF_TYPE_STRING.to_le_bytes());
        b.extend_from_slice(&5u64.to_le_bytes());
        b.extend_from_slice(b"llama");
        let name = b"w";
        b.extend_from_slice(&(name.len() as u64).to_le_bytes());
        b.extend_from_slice(name);
        b.extend_from_slice(&1u32.to_le_bytes()); // n_dims
        b.extend_from_slice(&8u64.to_le_bytes()); // 8 elements
        b.extend_from_slice(&0u32.to_le_bytes()); // F32
        b.extend_from_slice(&0u64.to_le_bytes()); // offset
        while b.len() % 32 != 0 {
            b.push(0);
        }
        let data = if truncate_data { 16 } else { 32 };
        b.extend(std::iter::repeat_n(0u8, data));
        b
    }

    fn write(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    #[test]
    fn accepts_a_well_formed_file() {
        let f = write(&gguf_bytes(false));
        let info = inspect(f.path()).unwrap();
        assert_eq!(info.architecture.as_deref(), Some("llama"));
        assert_eq!(info.tensor_count, 1);
        assert_eq!(info.parameters, 8);
    }

    #[test]
    fn rejects_truncated_tensor_data() {
        let f = write(&gguf_bytes(true));
        assert!(
            matches!(inspect(f.path()), Err(GgufError::Corrupt(m)) if m.contains("incomplete"))
        );
    }

    #[test]
    fn rejects_truncated_header_and_garbage() {
        let full = gguf_bytes(false);
        for cut in [0, 3, 10, 30, 60] {
            let f = write(&full[..cut]);
            assert!(inspect(f.path()).is_err(), "cut at {cut} accepted");
        }
        let f = write(b"this is a text file, not a model\n");
        assert_eq!(inspect(f.path()), Err(GgufError::BadMagic));
    }

    #[test]
    fn rejects_absurd_lengths_without_allocating_them() {
        let mut b = gguf_bytes(false);
        // Overwrite the key length with 2^60.
        b[24..32].copy_from_slice(&(1u64 << 60).to_le_bytes());
        let f = write(&b);
        assert!(matches!(inspect(f.path()), Err(GgufError::Corrupt(_))));
    }
}
