# The values of the Julia-written test vectors (tests/vectors/julia_NAME.bin): written by
# make_vectors.jl where Julia runs, read back by runtests.jl.

function vector_values()
    return Dict{String, Any}(
        # no out-of-band array: header + Julia serialization stream only
        "inband" => (7, "CDTypes", [1.5, -2.0], nothing),
        # two out-of-band arrays (1 KiB threshold): Float64 and Int32 regions
        "arrays" => (collect(1.0:200.0), Int32.(-300:-1)),
        # a matrix of ComplexF64 (kind complex double) next to an in-band small vector
        "complex" => (reshape(ComplexF64.(1:128, 128:-1:1), 16, 8), UInt8[1, 2, 3]),
    )
end
