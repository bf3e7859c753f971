//! JNI entry points of lancelet's Spark connector (`java/`, class
//! `io.lancelet.spark.NativeLib`). A thin layer: arguments in, a call into
//! [`scan`], results out; everything that can be tested without a JVM
//! lives in [`scan`], [`spark_types`] and [`export`].
//!
//! Handles are pointers to boxed Rust values (`Arc<Dataset>`,
//! `PartitionScan`) that Java holds as `long`s and closes exactly once.
//! Every entry point runs inside `EnvUnowned::with_env`, which catches
//! panics; errors and panics become a `io.lancelet.spark.LanceletException`
//! carrying lancelet's message, never an unwind into the JVM.

pub mod export;
pub mod scan;
pub mod spark_types;

use std::sync::Arc;

use jni::errors::ErrorPolicy;
use jni::objects::{JByteArray, JClass, JLongArray, JObjectArray, JString};
use jni::strings::JNIString;
use jni::sys::{jboolean, jint, jlong};
use jni::{jni_str, Env, EnvUnowned};
use lancelet::table::{Dataset, VersionRef};

use crate::scan::{PartitionScan, ScanRequest};

/// An error of an entry point: lancelet's, or one of the JNI calls.
#[derive(Debug)]
enum Failure {
    Lancelet(lancelet::Error),
    Jni(jni::errors::Error),
}

impl From<lancelet::Error> for Failure {
    fn from(e: lancelet::Error) -> Self {
        Failure::Lancelet(e)
    }
}

impl From<jni::errors::Error> for Failure {
    fn from(e: jni::errors::Error) -> Self {
        Failure::Jni(e)
    }
}

type Res<T> = Result<T, Failure>;

/// Throws `LanceletException` with the error's text (a pending Java
/// exception, e.g. from a failed JNI call, is left to propagate).
struct Throw;

fn throw(env: &mut Env<'_>, msg: String) {
    if !env.exception_check() {
        let _ = env.throw_new(jni_str!("io/lancelet/spark/LanceletException"), JNIString::new(msg));
    }
}

impl<T: Default> ErrorPolicy<T, Failure> for Throw {
    type Captures<'a: 'b, 'b> = ();

    fn on_error<'a: 'b, 'b>(env: &mut Env<'a>, _cap: &mut (), err: Failure) -> jni::errors::Result<T> {
        let msg = match err {
            Failure::Lancelet(e) => e.to_string(),
            Failure::Jni(e) => format!("JNI call failed: {e}"),
        };
        throw(env, msg);
        Ok(T::default())
    }

    fn on_panic<'a: 'b, 'b>(env: &mut Env<'a>, _cap: &mut (), payload: Box<dyn std::any::Any + Send + 'static>) -> jni::errors::Result<T> {
        let text = payload.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| payload.downcast_ref::<String>().cloned()).unwrap_or_default();
        throw(env, lancelet::Error::internal(format!("panic: {text}")).to_string());
        Ok(T::default())
    }
}

fn string(env: &Env<'_>, s: &JString<'_>) -> Res<Option<String>> {
    if s.is_null() {
        return Ok(None);
    }
    Ok(Some(s.try_to_string(env)?))
}

fn strings(env: &mut Env<'_>, a: &JObjectArray<'_, JString<'_>>) -> Res<Vec<String>> {
    if a.is_null() {
        return Ok(Vec::new());
    }
    let n = a.len(env)?;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let s = a.get_element(env, i)?;
        out.push(string(env, &s)?.unwrap_or_default());
    }
    Ok(out)
}

fn longs<'l>(env: &mut Env<'l>, v: &[i64]) -> Res<JLongArray<'l>> {
    let arr = JLongArray::new(env, v.len())?;
    arr.set_region(env, 0, v)?;
    Ok(arr)
}

fn dataset<'a>(h: jlong) -> Res<&'a Arc<Dataset>> {
    if h == 0 {
        return Err(lancelet::Error::invalid_input("the dataset handle is closed").into());
    }
    // SAFETY: a non-zero handle is a pointer from `open`, which Java
    // closes once, after its last use.
    Ok(unsafe { &*(h as *const Arc<Dataset>) })
}

/// Open a dataset: `version` >= 0 pins a number, else `tag` (may be null)
/// names a tag, else the latest; `storage` holds key, value, key, value...
#[no_mangle]
pub extern "system" fn Java_io_lancelet_spark_NativeLib_open<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    uri: JString<'l>,
    version: jlong,
    tag: JString<'l>,
    storage: JObjectArray<'l, JString<'l>>,
) -> jlong {
    env.with_env(|env| -> Res<jlong> {
        let uri = string(env, &uri)?.ok_or_else(|| lancelet::Error::invalid_input("no dataset URI"))?;
        let kv = strings(env, &storage)?;
        let options: lancelet::io::StorageOptions = kv.chunks(2).filter(|p| p.len() == 2).map(|p| (p[0].clone(), p[1].clone())).collect();
        let v = if version >= 0 { Some(VersionRef::Number(version as u64)) } else { string(env, &tag)?.map(VersionRef::Tag) };
        let ds = scan::open(&uri, v, &options)?;
        Ok(Box::into_raw(Box::new(ds)) as jlong)
    })
    .resolve::<Throw>()
}

/// Release a dataset handle.
#[no_mangle]
pub extern "system" fn Java_io_lancelet_spark_NativeLib_close<'l>(mut env: EnvUnowned<'l>, _c: JClass<'l>, h: jlong) {
    env.with_env(|_| -> Res<()> {
        if h != 0 {
            // SAFETY: see `dataset`; this is the one release.
            drop(unsafe { Box::from_raw(h as *mut Arc<Dataset>) });
        }
        Ok(())
    })
    .resolve::<Throw>()
}

/// The version number of an open dataset.
#[no_mangle]
pub extern "system" fn Java_io_lancelet_spark_NativeLib_version<'l>(mut env: EnvUnowned<'l>, _c: JClass<'l>, h: jlong) -> jlong {
    env.with_env(|_| -> Res<jlong> { Ok(dataset(h)?.version() as jlong) }).resolve::<Throw>()
}

/// The Spark-readable schema (see `spark_types::spark_schema`) as IPC bytes.
#[no_mangle]
pub extern "system" fn Java_io_lancelet_spark_NativeLib_sparkSchema<'l>(mut env: EnvUnowned<'l>, _c: JClass<'l>, h: jlong) -> JByteArray<'l> {
    env.with_env(|env| -> Res<JByteArray<'l>> {
        let schema = spark_types::spark_schema(dataset(h)?.schema())?;
        Ok(env.byte_array_from_slice(&scan::schema_ipc(&schema)?)?)
    })
    .resolve::<Throw>()
}

/// The filter-relevant kinds of the columns (see `scan::column_kinds`).
#[no_mangle]
pub extern "system" fn Java_io_lancelet_spark_NativeLib_columnKinds<'l>(mut env: EnvUnowned<'l>, _c: JClass<'l>, h: jlong) -> JString<'l> {
    env.with_env(|env| -> Res<JString<'l>> { Ok(env.new_string(scan::column_kinds(dataset(h)?.schema()))?) }).resolve::<Throw>()
}

/// Read partitions: fragment, start, end, rows, bytes for each (see `scan::plan`).
#[no_mangle]
pub extern "system" fn Java_io_lancelet_spark_NativeLib_plan<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    h: jlong,
    rows_per_partition: jlong,
    exact: jboolean,
) -> JLongArray<'l> {
    env.with_env(|env| -> Res<JLongArray<'l>> {
        let rpp = u64::try_from(rows_per_partition).map_err(|_| lancelet::Error::invalid_input("rows_per_partition must be positive"))?;
        let slices = scan::plan(dataset(h)?, rpp, exact)?;
        let flat: Vec<i64> = slices.iter().flat_map(|s| [s.fragment as i64, s.start as i64, s.end as i64, s.rows as i64, s.bytes as i64]).collect();
        longs(env, &flat)
    })
    .resolve::<Throw>()
}

/// Rows matching a filter (null: all rows, from metadata).
#[no_mangle]
pub extern "system" fn Java_io_lancelet_spark_NativeLib_countRows<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    h: jlong,
    filter: JString<'l>,
) -> jlong {
    env.with_env(|env| -> Res<jlong> {
        let filter = string(env, &filter)?;
        Ok(scan::count_rows(dataset(h)?, filter.as_deref())? as jlong)
    })
    .resolve::<Throw>()
}

/// Start the scan of one partition; returns its handle.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_io_lancelet_spark_NativeLib_openScan<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    h: jlong,
    columns: JObjectArray<'l, JString<'l>>,
    filter: JString<'l>,
    fragment: jlong,
    start: jlong,
    end: jlong,
    batch_size: jint,
    limit: jlong,
    row_id: jboolean,
    row_addr: jboolean,
    frag_id: jboolean,
) -> jlong {
    env.with_env(|env| -> Res<jlong> {
        let req = ScanRequest {
            columns: strings(env, &columns)?,
            filter: string(env, &filter)?,
            fragment: fragment as u64,
            start: start as u64,
            end: end as u64,
            batch_size: (batch_size > 0).then_some(batch_size as usize),
            limit: (limit >= 0).then_some(limit as u64),
            row_id,
            row_addr,
            frag_id,
        };
        let s = PartitionScan::new(dataset(h)?, &req)?;
        Ok(Box::into_raw(Box::new(s)) as jlong)
    })
    .resolve::<Throw>()
}

/// The next batch of a scan (see `Exported::to_longs`), or null at the end.
/// Releases the batch returned before.
#[no_mangle]
pub extern "system" fn Java_io_lancelet_spark_NativeLib_nextBatch<'l>(mut env: EnvUnowned<'l>, _c: JClass<'l>, s: jlong) -> JLongArray<'l> {
    env.with_env(|env| -> Res<JLongArray<'l>> {
        if s == 0 {
            return Err(lancelet::Error::invalid_input("the scan handle is closed").into());
        }
        // SAFETY: a pointer from `openScan`, used by one task thread and
        // closed once after its last use.
        let scan = unsafe { &mut *(s as *mut PartitionScan) };
        match scan.next_batch()? {
            Some(e) => longs(env, &e.to_longs()),
            None => Ok(JLongArray::default()),
        }
    })
    .resolve::<Throw>()
}

/// Release a scan handle (and its last batch).
#[no_mangle]
pub extern "system" fn Java_io_lancelet_spark_NativeLib_closeScan<'l>(mut env: EnvUnowned<'l>, _c: JClass<'l>, s: jlong) {
    env.with_env(|_| -> Res<()> {
        if s != 0 {
            // SAFETY: see `nextBatch`; this is the one release.
            drop(unsafe { Box::from_raw(s as *mut PartitionScan) });
        }
        Ok(())
    })
    .resolve::<Throw>()
}
