//! JS values the N-API layer hands out that napi-rs has no ready type for: Buffers holding
//! their own copy, partition values typed for an Iceberg manifest (BigInt, Buffer, number),
//! and objects whose keys keep their order. Memory: the values themselves, copied once.

use crate::iceberg::partition::PartitionValue;
use napi::bindgen_prelude::*;
use napi::{Status, ValueType};

/// Bytes handed to JS as a `Buffer` that holds its own copy. A `Buffer` made from a `Vec`
/// wraps it as external memory with a finalizer per value; a result with thousands of files
/// holds over a hundred thousand bound values, and copies cost a fraction of that.
pub struct CopiedBuffer(pub Vec<u8>);

impl TypeName for CopiedBuffer {
    fn type_name() -> &'static str {
        "Buffer"
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ToNapiValue for CopiedBuffer {
    unsafe fn to_napi_value(env: napi::sys::napi_env, val: Self) -> Result<napi::sys::napi_value> {
        let mut out = std::ptr::null_mut();
        let mut data = std::ptr::null_mut();
        // SAFETY: `val.0` outlives the call, which copies `len` bytes from it; an empty value
        // is created without a source pointer.
        let status = unsafe {
            if val.0.is_empty() {
                napi::sys::napi_create_buffer(env, 0, &mut data, &mut out)
            } else {
                napi::sys::napi_create_buffer_copy(env, val.0.len(), val.0.as_ptr().cast(), &mut data, &mut out)
            }
        };
        if status != napi::sys::Status::napi_ok {
            return Err(napi::Error::new(Status::GenericFailure, format!("creating a Buffer of {} bytes failed ({status})", val.0.len())));
        }
        Ok(out)
    }
}

/// A value typed for an Iceberg manifest: `long` and timestamps as BigInt, bytes as Buffer,
/// `int`, floats and dates (days) as numbers, strings and decimals as strings.
pub struct TypedValue(pub PartitionValue);

impl TypeName for TypedValue {
    fn type_name() -> &'static str {
        "unknown"
    }
    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl ToNapiValue for TypedValue {
    unsafe fn to_napi_value(env: napi::sys::napi_env, val: Self) -> Result<napi::sys::napi_value> {
        // SAFETY: each arm hands `env` (valid for this call) to napi-rs's own conversion.
        unsafe {
            match val.0 {
                PartitionValue::Null => Null::to_napi_value(env, Null),
                PartitionValue::Bool(b) => bool::to_napi_value(env, b),
                PartitionValue::Int(i) | PartitionValue::Date(i) => f64::to_napi_value(env, i as f64),
                PartitionValue::Long(i) | PartitionValue::Timestamp(i) => BigInt::to_napi_value(env, BigInt::from(i)),
                PartitionValue::Float(f) => f64::to_napi_value(env, f),
                PartitionValue::String(s) | PartitionValue::Decimal(s) => String::to_napi_value(env, s),
                PartitionValue::Bytes(b) => CopiedBuffer::to_napi_value(env, CopiedBuffer(b)),
            }
        }
    }
}

/// A JS object whose keys keep the given order.
pub struct OrderedObject<V>(pub Vec<(String, V)>);

impl<V> TypeName for OrderedObject<V> {
    fn type_name() -> &'static str {
        "Object"
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl<V: ToNapiValue> ToNapiValue for OrderedObject<V> {
    unsafe fn to_napi_value(env: napi::sys::napi_env, val: Self) -> Result<napi::sys::napi_value> {
        let mut obj = std::ptr::null_mut();
        // SAFETY: `env` is valid for this call; `obj` is created here and each value converted by
        // napi-rs before it is set.
        unsafe {
            check(napi::sys::napi_create_object(env, &mut obj), "creating an object")?;
            for (key, value) in val.0 {
                let v = V::to_napi_value(env, value)?;
                let k = String::to_napi_value(env, key)?;
                check(napi::sys::napi_set_property(env, obj, k, v), "setting a property")?;
            }
        }
        Ok(obj)
    }
}

fn check(status: napi::sys::napi_status, what: &str) -> Result<()> {
    if status == napi::sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::new(Status::GenericFailure, format!("{what} failed ({status})")))
    }
}
