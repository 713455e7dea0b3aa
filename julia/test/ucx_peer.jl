# The second process of the UCX test: connect, send the sample object, receive it back.
using CDTypes
include(joinpath(@__DIR__, "types.jl"))

port = parse(Int, ARGS[1])
ep = CDTypes.connect("127.0.0.1", port; timeout = 120)
obj = sample_object()
CDTypes.send(ep, obj; tag = 1, timeout = 120)
back = CDTypes.recv(ep; tag = 2, timeout = 120)
ok = isequal(back, obj)
close(ep)
ok || (println(stderr, "ucx_peer: the object came back different"); exit(1))
