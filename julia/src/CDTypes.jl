"""
    CDTypes

Send any Julia object between processes as ONE message, on libcdt (a C library with a stable
C ABI): a frame = header (every length) + the Julia serialization stream + the object's large
bits-type arrays as out-of-band regions, which move without a copy.

    f = CDTypes.encode(obj)               # Frame: iov(f), pieces(f), tobytes(f), close(f)
    obj2 = CDTypes.decode(CDTypes.tobytes(f))

    ep = CDTypes.connect("host", 13337)   # UCX transport; CDTypes.listen(port=13337) + accept
    CDTypes.send(ep, obj; tag=1)
    obj = CDTypes.recv(ep; tag=1, timeout=5)

With MPI.jl loaded: `CDTypes.send(obj, comm; dest, tag)` / `CDTypes.recv(comm; source, tag)`.
See docs/JULIA.md in the repository.
"""
module CDTypes

using Artifacts
using Libdl
using Preferences
using Serialization

export CDTypesError, Frame, RawFrame

include("binary.jl")
include("lib.jl")
include("serialize.jl")
include("frame.jl")
include("ucx.jl")

"""
    CDTypes.send(obj, comm; dest, tag=0)
    CDTypes.recv(comm; source=nothing, tag=nothing)

MPI methods, defined when MPI.jl is loaded (package extension CDTypesMPIExt): the object is
one MPI message holding its frame; the receiver matches it with a matched probe, allocates
the announced size, receives and decodes; on a communicator attached with `mpi_attach`, the
large arrays follow as one more message (the protocol of the Python package's MPI path).
"""
function mpi_doc end

"""
    CDTypes.mpi_attach(comm) -> MPI.Comm

With MPI.jl loaded: duplicate `comm` (collective over it) so that the arrays of 64 KiB or
more of objects sent on `comm` travel as one separate message straight into the receiver's
arrays; see docs/JULIA.md.
"""
function mpi_attach end

end # module
