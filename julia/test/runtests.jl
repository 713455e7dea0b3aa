using Test
using Serialization

const REPO = normpath(joinpath(@__DIR__, "..", ".."))
include("use_build_tree.jl")

using CDTypes
using CDTypes: encode, decode, decode_frame, tobytes, iov, pieces, nregions
if Base.find_package("MPI") !== nothing
    import MPI # the test environment has it (Project.toml [extras]): the extension loads
end

include("types.jl")
include("json_min.jl")
include("vector_values.jl")

errname(f) = try
    f()
    "no error"
catch e
    e isa CDTypesError ? e.name : string(typeof(e))
end

roundtrip(x; kw...) = decode(tobytes(encode(x; kw...)))

@testset "CDTypes" begin
    @testset "library and errors" begin
        @test isfile(CDTypes.libcdt_path()) || !isempty(CDTypes.libcdt_path())
        # the binary preference: a bad choice is refused before anything is written
        pref = CDTypes.library_preference()
        @test pref in ("auto", "jll", "system") || isabspath(pref)
        @test_throws ArgumentError CDTypes.set_library!("libcdtypes.so") # not absolute
        @test_throws ArgumentError CDTypes.set_library!("/nonexistent/libcdtypes.so")
        @test_throws ArgumentError CDTypes.set_library!("jll"; ucx = CDTypes.libcdt_path())
        @test_throws ArgumentError CDTypes.set_library!(
            CDTypes.libcdt_path();
            ucx = "libcdtypes-ucx.so",
        )
        @test CDTypes.library_preference() == pref
        @test CDTypes.libcdt_version() >= 100
        @test CDTypes.kind_size(12) == 8
        @test CDTypes.kind_name(12) == "double"
        e = try
            CDTypes.check(-9, "reading")
        catch err
            err
        end
        @test e isa CDTypesError
        @test e.code == -9 && e.name == "CDT_ERR_FRAME_MAGIC"
        @test e.message == "not a libcdt frame (bad magic)"
        @test occursin(
            "reading: not a libcdt frame (bad magic) (CDT_ERR_FRAME_MAGIC",
            sprint(showerror, e),
        )
        @test CDTypes.check(0) == 0
        # every status code of the C ABI list has its name
        abi = joinpath(REPO, "bindings", "abi.txt")
        if isfile(abi)
            for line in eachline(abi)
                m = match(r"^status (\w+) = (-?\d+)", line)
                m === nothing && continue
                @test CDTypes.err_name(parse(Int, m[2])) == m[1]
            end
        end
        @test CDTypes.err_name(-5000) == "CDT_ERR_USER"
    end

    @testset "round trips" begin
        for x in Any[
                1,
                2.5,
                "text",
                :sym,
                nothing,
                missing,
                (1, "a", 2.0),
                Dict("a" => 1, "b" => [1, 2, 3]),
                Dict(:k => Dict(:inner => rand(2000))),
                reshape(collect(1.0:1000.0), 10, 10, 10),
                ComplexF64.(1:1000, 1:1000),
                BitArray(rand(Bool, 10000)),
                [1.0, missing, 2.0],
                Any[rand(300), rand(Int32, 2000), [[1, 2], [3]]],
                Point(1.5, 2),
                [Point(i, i) for i in 1:1000],
                Node("n", rand(1000), Node("m", Float64[], nothing)),
                Float64[],
                zeros(0, 3),
                fill(7.0),
                sample_object(),
            ]
            @test isequal(roundtrip(x), x)
            @test isequal(roundtrip(x; threshold = -1), x)
            @test isequal(roundtrip(x; threshold = 0), x)
        end
        @test roundtrip(reshape(collect(1.0:512.0), 8, 8, 8)) isa Array{Float64, 3}
    end

    @testset "out-of-band arrays" begin
        a = rand(10_000)
        b = rand(Int32, 3, 400)
        f = encode((a, b, "small", rand(3)))
        @test nregions(f) == 2
        # zero-copy: the frame's pieces include the arrays' own memory
        ps = iov(f)
        @test any(p -> p.base == Ptr{Cvoid}(pointer(a)) && p.len == sizeof(a), ps)
        @test any(p -> p.base == Ptr{Cvoid}(pointer(b)) && p.len == sizeof(b), ps)
        @test sum(p -> p.len, ps) == f.size
        @test reduce(vcat, [copy(p) for p in pieces(f)]) == tobytes(f)
        raw = decode_frame(tobytes(f))
        @test raw.kinds == [12, 5] # double, int32
        @test raw.regions[1] == reinterpret(UInt8, a)
        @test length(raw.header) == raw.info.header_size == 48 + 16 * 2
        close(f)
        @test !isopen(f)
        @test_throws ArgumentError iov(f)
        close(f) # idempotent

        # the same array twice: one region, identity kept
        x = rand(1000)
        f = encode((x, x))
        @test nregions(f) == 1
        y = decode(tobytes(f))
        @test y[1] === y[2] && y[1] == x
        # BitArray stays in band, and so do small arrays and arrays of non-bits types
        @test nregions(encode(trues(100_000))) == 0
        @test nregions(encode(rand(10))) == 0
        @test nregions(encode(fill("s", 1000))) == 0
        @test nregions(encode(rand(1000); threshold = -1)) == 0
        # each array is allocated with its type and dimensions from the stream
        z = decode(tobytes(encode(Dict(
            :c => ComplexF64.(1:500),
            :p => [Point(1, 2) for _ in 1:100],
        ))))
        @test z[:c] isa Vector{ComplexF64} && z[:p] isa Vector{Point}
    end

    @testset "malformed frames" begin
        good = tobytes(encode(Dict("a" => rand(1000), "b" => 1)))
        @test errname(() -> decode(good[1:end - 1])) == "CDT_ERR_FRAME_TRUNCATED"
        @test errname(() -> decode(good[1:40])) == "CDT_ERR_FRAME_TRUNCATED"
        @test errname(() -> decode(UInt8[])) == "CDT_ERR_FRAME_TRUNCATED"
        bad = copy(good)
        bad[1] = UInt8('X')
        @test errname(() -> decode(bad)) == "CDT_ERR_FRAME_MAGIC"
        bad = copy(good)
        bad[5] = 0x02
        @test errname(() -> decode(bad)) == "CDT_ERR_FRAME_VERSION"
        bad = copy(good)
        bad[41] = 0x02 # object_count: the sender's 1 object became 2
        @test errname(() -> decode(bad)) == "CDT_ERR_FRAME_MISMATCH"
        bad[7] = 0x00 # no OBJECT_COUNT flag: offset 40 is reserved, must be zero
        @test errname(() -> decode(bad)) == "CDT_ERR_FRAME_MALFORMED"
        @test errname(() -> decode(vcat(good, 0x00))) == "CDT_ERR_FRAME_MALFORMED"
        @test errname(() -> decode_frame(good[1:end - 8])) == "CDT_ERR_FRAME_TRUNCATED"
        @test errname(() -> decode(good; max_regions = 0)) == "CDT_ERR_LIMIT"
        @test errname(() -> decode(good; max_frame_bytes = 100)) == "CDT_ERR_LIMIT"
        @test isequal(decode(good; max_regions = 1, max_frame_bytes = length(good))["b"], 1)
        # corrupted headers are errors or (a changed kind) still a frame; never a crash
        for i in 1:200
            bad = copy(good)
            bad[rand(1:64)] ⊻= UInt8(1) << rand(0:7) # header bytes only
            try
                decode(bad)
            catch
            end
        end
        @test true
    end

    @testset "frames written by C, Python, Rust and Julia" begin
        dir = joinpath(REPO, "tests", "vectors")
        files = isdir(dir) ? filter(f -> endswith(f, ".bin"), readdir(dir)) : String[]
        @test !isempty(files)
        writers = Set(first(split(f, "_")) for f in files)
        @test issubset(Set(["c", "python", "rust"]), writers)
        values = vector_values()
        for name in files
            path = joinpath(dir, name)
            jpath = path[1:(end - 4)] * ".json"
            @test isfile(jpath) # every vector has its description (describe.py --write)
            isfile(jpath) || continue
            want = JSONMin.parse_json(read(jpath, String))
            @test want isa Dict
            want isa Dict || continue
            raw = decode_frame(read(path))
            for key in (
                    "version",
                    "flags",
                    "header_size",
                    "packed_size",
                    "region_count",
                    "region_bytes",
                    "frame_size",
                )
                @test getfield(raw.info, Symbol(key)) == want[key]
            end
            @test bytes2hex(raw.header) == want["header_hex"]
            @test bytes2hex(raw.stream) == want["stream_hex"]
            @test length(raw.regions) == length(want["regions"])
            for (r, (bytes, kind)) in zip(want["regions"], zip(raw.regions, raw.kinds))
                @test length(bytes) == r["len"]
                @test kind == r["kind"]
                @test bytes2hex(bytes) == r["hex"]
            end
            if startswith(name, "julia_")
                # a Julia frame reads back into the value it was written from
                key = name[(length("julia_") + 1):(end - 4)]
                @test haskey(values, key) && isequal(decode(read(path)), values[key])
            else
                # a C, Python or Rust frame is a valid frame but not a Julia stream
                @test_throws ArgumentError decode(read(path))
            end
            # cut short: an error, never a partial object
            data = read(path)
            @test_throws CDTypesError decode_frame(data[1:(end - 1)])
        end
    end

    @testset "MPI, two ranks" begin
        if !isdefined(@__MODULE__, :MPI)
            @info "MPI.jl not installed: MPI test skipped"
        else
            @test Base.get_extension(CDTypes, :CDTypesMPIExt) !== nothing
            peer = joinpath(@__DIR__, "mpi_peer.jl")
            cmd = `$(MPI.mpiexec()) -n 2 $(Base.julia_cmd()) --project=$(Base.active_project()) $peer`
            @test success(pipeline(cmd; stdout = stdout, stderr = stderr))
        end
    end

    @testset "the core alone loads no UCX" begin
        # a fresh process frames an object: neither libcdt's transport nor UCX is mapped
        code = """
        using CDTypes
        CDTypes.decode(CDTypes.tobytes(CDTypes.encode(Dict("a" => collect(1.0:1000.0)))))
        maps = isfile("/proc/self/maps") ? read("/proc/self/maps", String) : ""
        found = filter(l -> occursin(r"/lib(ucp|uct|ucs|ucm|cdtypes-ucx)[^/]*\$", l), split(maps, '\\n'))
        isempty(found) || (println(join(found, '\\n')); exit(1))
        """
        cmd = `$(Base.julia_cmd()) --project=$(Base.active_project()) -e $code`
        @test success(pipeline(cmd; stdout = stdout, stderr = stderr))
    end

    @testset "the JLL's core loads no UCX" begin
        # where libcdtypes_jll is installed and is the preference: a fresh process without
        # CDTYPES_LIBCDT frames an object with the JLL's core, and neither the JLL (whose
        # UCX_jll opens UCX) nor UCX nor the transport is loaded
        if CDTypes._effective_binary() != "jll" || !CDTypes._jll_installed()
            @info "libcdtypes_jll is not installed or not the preference: skipped"
        else
            code = """
            using CDTypes
            CDTypes.decode(CDTypes.tobytes(CDTypes.encode(Dict("a" => collect(1.0:1000.0)))))
            occursin("artifacts", CDTypes.libcdt_path()) || (println(CDTypes.libcdt_path()); exit(2))
            haskey(Base.loaded_modules, CDTypes._JLL) && exit(3)
            maps = read("/proc/self/maps", String)
            found = filter(l -> occursin(r"/lib(ucp|uct|ucs|ucm|cdtypes-ucx)[^/]*\$", l), split(maps, '\\n'))
            isempty(found) || (println(join(found, '\\n')); exit(1))
            """
            cmd = `$(Base.julia_cmd()) --project=$(Base.active_project()) -e $code`
            withenv("CDTYPES_LIBCDT" => nothing, "CDTYPES_LIBCDT_UCX" => nothing) do
                @test success(pipeline(cmd; stdout = stdout, stderr = stderr))
            end
        end
    end

    @testset "UCX, two processes" begin
        if !CDTypes.has_ucx()
            @info "libcdt was built without UCX: two-process test skipped"
        elseif get(ENV, "CDTYPES_SKIP_UCX", "") == "1"
            @info "CDTYPES_SKIP_UCX=1: two-process test skipped"
        else
            @test !isempty(CDTypes.ucx_version())
            @test_throws ArgumentError CDTypes.Worker(protocol = :fast)
            w = CDTypes.Worker(protocol = :single)
            close(w)
            @test !isopen(w)
            # an event fd only with wakeup
            w = CDTypes.Worker(wakeup = false)
            @test_throws CDTypesError CDTypes.worker_fd(w)
            close(w)
            w = CDTypes.Worker(wakeup = true)
            @test CDTypes.worker_fd(w) isa RawFD
            while CDTypes.progress(w) > 0 end
            @test CDTypes.arm(w) isa Bool
            close(w)
            l = CDTypes.listen(host = "127.0.0.1", port = 0)
            port = CDTypes.port(l)
            @test port > 0
            peer = run(
                pipeline(
                    `$(Base.julia_cmd()) --project=$(Base.active_project()) $(joinpath(@__DIR__, "ucx_peer.jl")) $port`;
                    stdout = stdout,
                    stderr = stderr,
                );
                wait = false,
            )
            try
                ep = CDTypes.accept(l; timeout = 300)
                obj = CDTypes.recv(ep; tag = 1, timeout = 300)
                @test isequal(obj, sample_object())
                @test obj["field"] isa Array{Float64, 3}
                @test occursin("am=", CDTypes.transports(ep)) # e.g. "am=tcp/lo rma=tcp/lo"
                CDTypes.send(ep, obj; tag = 2, timeout = 60)
                @test_throws CDTypesError CDTypes.recv(ep; tag = 99, timeout = 0.2)
                e = try
                    CDTypes.recv(ep; tag = 99, timeout = 0.2)
                catch err
                    err
                end
                @test e.name == "CDT_ERR_TIMEOUT"
                wait(peer)
                @test success(peer)
                close(ep)
            finally
                process_running(peer) && kill(peer)
                close(l)
            end
            @test !isopen(l.worker)
        end
    end
end
