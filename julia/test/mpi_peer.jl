# Run by runtests.jl under `mpiexec -n 2`: objects over CDTypes' MPI path (package extension
# CDTypesMPIExt), on COMM_WORLD (not attached: every object whole in one message) and on an
# attached duplicate (arrays of 64 KiB or more as one separate parts message), with a wildcard
# tag; a message that is not a CDTypes object is a CDTypesError on the receiver.
using MPI
using CDTypes
include(joinpath(@__DIR__, "types.jl"))

MPI.Init()
comm = MPI.COMM_WORLD
rank = MPI.Comm_rank(comm)
attached = MPI.Comm_dup(comm)
CDTypes.mpi_attach(attached)
objects = Any[
    sample_object(),                                 # 1 MiB array + small ones
    [collect(Float64, i:(i + 99_999)) for i in 1:3], # three parts of 800 KB
    (1, "in band only", nothing),
    [zeros(UInt8, 70_000), ones(Int32, 10)], # one part just over the threshold
]
ok = true
for c in (comm, attached), (i, obj) in enumerate(objects)
    if rank == 0
        CDTypes.send(obj, c; dest = 1, tag = i)
        back = CDTypes.recv(c; source = 1, tag = 100 + i)
        global ok &= isequal(back, obj)
    else
        x = CDTypes.recv(c; source = 0) # any tag
        CDTypes.send(x, c; dest = 0, tag = 100 + i)
    end
end
if rank == 0
    MPI.Send(UInt8[1, 2, 3], comm; dest = 1, tag = 77)
else
    refused = try
        CDTypes.recv(comm; source = 0, tag = 77)
        false
    catch e
        e isa CDTypesError
    end
    global ok &= refused
end
MPI.Barrier(comm)
ok ||
    println(
        stderr,
        "mpi_peer: rank $rank: an object came back different or was not refused",
    )
MPI.Finalize()
exit(ok ? 0 : 1)
