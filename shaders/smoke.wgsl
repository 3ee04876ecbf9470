// A trivial kernel for the GPU smoke test: out[i] = 3·in[i] + i.
@group(0) @binding(0) var<storage, read> input: array<u32>;
@group(0) @binding(1) var<storage, read_write> output: array<u32>;

@compute @workgroup_size(64)
fn smoke(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i < arrayLength(&output) {
        output[i] = 3u * input[i] + i;
    }
}
