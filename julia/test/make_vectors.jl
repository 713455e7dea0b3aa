# Write the Julia-encoded test vectors tests/vectors/julia_NAME.bin (one frame each, from
# CDTypes.encode), then describe them in the shared schema:
#
#     julia --project=julia julia/test/make_vectors.jl
#     python3 tests/vectors/describe.py --write
#
# runtests.jl decodes them back into vector_values(); the other bindings' tests check them at
# the frame level (header, stream bytes, region lengths, kinds and bytes).
include(joinpath(@__DIR__, "use_build_tree.jl"))
using CDTypes
include(joinpath(@__DIR__, "vector_values.jl"))

const OUT = normpath(joinpath(@__DIR__, "..", "..", "tests", "vectors"))

for (name, value) in sort!(collect(vector_values()); by = first)
    f = CDTypes.encode(value)
    bytes = CDTypes.tobytes(f)
    close(f)
    isequal(CDTypes.decode(bytes), value) || error("julia_$name: does not read back")
    path = joinpath(OUT, "julia_$name.bin")
    write(path, bytes)
    println("$path: $(length(bytes)) bytes")
end
println("now run: python3 tests/vectors/describe.py --write")
