// Stage `scan` (CPU mirror: src/grid/scan.rs): exclusive prefix sum of the T slot counts, in
// place, plus the total at index T, giving slot_start (T + 1).
//
// Multi-dispatch reduce-then-scan, safe without forward progress between workgroups:
//   level 0 holds the T counts; `scan_reduce` writes each 2048-element block's sum to level 1;
//   repeat until a level fits one block (the top, at most 2048 sums); `scan_block_top` scans
//   the level below the top, each workgroup summing the top's entries before its own block for
//   its offset (at most 2048 integers, so the top needs no pass of one workgroup of its own);
//   then `scan_block` scans each lower level's blocks in place, adding the block's offset from
//   the (now scanned) level above. T ≤ 2048: 1 dispatch (`scan_block` alone, offset 0);
//   T ≤ 2048²: 2; T ≤ 2^24: 4.
// Inputs: data (len counts, capacity len + 1), sums (block offsets, or 0 at the top).
// Outputs: data[0..len) exclusive prefix sums, data[len] the total; `scan_reduce`: sums.
// Worked example, len 4: data [2, 0, 1, 0] → [0, 2, 2, 3, 3].

const SCAN_ITEMS: u32 = 8u;
const SCAN_BLOCK: u32 = 2048u; // WORKGROUP_SIZE * SCAN_ITEMS

struct ScanParams {
    len: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> scan: ScanParams;
@group(0) @binding(1) var<storage, read_write> data: array<u32>;
@group(0) @binding(2) var<storage, read_write> sums: array<u32>;

// Rakers: WORKGROUP_SIZE / RAKE invocations each scan RAKE consecutive partials serially.
const RAKE: u32 = 16u;
const RAKERS: u32 = 16u; // WORKGROUP_SIZE / RAKE

var<workgroup> partial: array<u32, WORKGROUP_SIZE>;
var<workgroup> rake: array<u32, RAKERS>;

// Inclusive scan of one value per invocation across the workgroup, by raking: 16 invocations
// scan 16 values each, one scans their 16 totals, everyone adds its raker's offset. Three
// barriers instead of a Hillis–Steele scan's seventeen: on llvmpipe every barrier switches
// between all the workgroup's SIMD chunks, which made the scan 9× slower than the CPU's.
// Worked example with 4 rakers of 2 (8 invocations): values 1..8 → rake totals 3, 7, 11, 15 →
// scanned 3, 10, 21, 36 → invocation 5 (value 6, raker 2) returns 5 + 6 + 10 = 21.
fn workgroup_inclusive_scan(lid: u32, value: u32) -> u32 {
    partial[lid] = value;
    workgroupBarrier();
    if lid < RAKERS {
        var run = 0u;
        for (var k = 0u; k < RAKE; k = k + 1u) {
            let idx = lid * RAKE + k;
            run = run + partial[idx];
            partial[idx] = run;
        }
        rake[lid] = run;
    }
    workgroupBarrier();
    if lid == 0u {
        var run = 0u;
        for (var k = 0u; k < RAKERS; k = k + 1u) {
            run = run + rake[k];
            rake[k] = run;
        }
    }
    workgroupBarrier();
    let r = lid / RAKE;
    return partial[lid] + select(0u, rake[max(r, 1u) - 1u], r > 0u);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn scan_reduce(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wg: vec3<u32>) {
    let lid = lid3.x;
    let base = wg.x * SCAN_BLOCK;
    var total = 0u;
    // Strided so neighbouring invocations read neighbouring words.
    for (var k = 0u; k < SCAN_ITEMS; k = k + 1u) {
        let idx = base + k * WORKGROUP_SIZE + lid;
        if idx < scan.len {
            total = total + data[idx];
        }
    }
    let block_total = workgroup_inclusive_scan(lid, total);
    if lid == WORKGROUP_SIZE - 1u {
        sums[wg.x] = block_total;
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn scan_block(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wg: vec3<u32>) {
    scan_in_place(lid3.x, wg.x, sums[wg.x]);
}

var<workgroup> top_offset: u32;

// The level below the top: block w's offset is the sum of the top's (unscanned) entries
// 0..w, the lanes taking entries lid, lid + 256, ... and the workgroup's scan adding their
// partials (the last lane's inclusive value is the sum).
// Worked example: top [5, 2, 7], block 2 -> offset 7.
@compute @workgroup_size(WORKGROUP_SIZE)
fn scan_block_top(
    @builtin(local_invocation_id) lid3: vec3<u32>,
    @builtin(workgroup_id) wg: vec3<u32>,
) {
    let lid = lid3.x;
    var part = 0u;
    for (var j = lid; j < wg.x; j = j + WORKGROUP_SIZE) {
        part = part + sums[j];
    }
    let sum = workgroup_inclusive_scan(lid, part);
    if lid == WORKGROUP_SIZE - 1u {
        top_offset = sum;
    }
    workgroupBarrier();
    // scan_in_place's scan reuses `partial` and `rake`: every lane has read its result of the
    // scan above before the barrier.
    scan_in_place(lid, wg.x, top_offset);
}

// Scans block w of `data` in place from `offset`; writes the total at data[len].
fn scan_in_place(lid: u32, w: u32, offset: u32) {
    let base = w * SCAN_BLOCK + lid * SCAN_ITEMS;
    var items: array<u32, SCAN_ITEMS>;
    var total = 0u;
    for (var k = 0u; k < SCAN_ITEMS; k = k + 1u) {
        let idx = base + k;
        var v = 0u;
        if idx < scan.len {
            v = data[idx];
        }
        items[k] = v;
        total = total + v;
    }
    var running = offset + workgroup_inclusive_scan(lid, total) - total;
    for (var k = 0u; k < SCAN_ITEMS; k = k + 1u) {
        let idx = base + k;
        if idx < scan.len {
            data[idx] = running;
        }
        running = running + items[k];
        if idx + 1u == scan.len {
            data[scan.len] = running;
        }
    }
}
