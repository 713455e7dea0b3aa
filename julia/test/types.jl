# Types and a sample object shared by the tests and the two-process UCX peer (both in Main).

struct Point
    x::Float64
    y::Int32
end

mutable struct Node
    name::String
    data::Vector{Float64}
    next::Union{Nothing, Node}
end

Base.isequal(a::Node, b::Node) = isequal(a.name, b.name) &&
    isequal(a.data, b.data) &&
    isequal(a.next, b.next)

function sample_object()
    return Dict{String, Any}(
        "step" => 7,
        "field" => reshape(collect(1.0:512.0), 8, 8, 8), # Array{Float64,3}, out of band
        "spectrum" => ComplexF64.(1:300, -(1:300)),      # Vector{ComplexF64}, out of band
        "mask" => trues(5000),                           # BitArray, in band
        "maybe" => [1.0, missing, 3.0],                  # missing values
        "points" => [Point(i, i) for i in 1:200],        # user isbits type, out of band
        "nested" => [Int32.(1:300), Float32[1, 2, 3], [Int8(1)]],
        "tuple" => (1, "two", 3.0, :four, nothing),
        "node" => Node(
            "a",
            collect(range(0, 1; length = 400)),
            Node("b", Float64[], nothing),
        ),
        "strings" => ["x", "y"],
        "big" => zeros(UInt8, 1 << 20),
    )
end
