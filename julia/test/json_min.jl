# A minimal JSON reader for the test vectors' expected values (objects, arrays, strings,
# integers, floats, true/false/null), so the tests need no package beyond Test.
module JSONMin

function parse_json(s::AbstractString)
    chars = collect(String(s))
    v, i = _value(chars, _ws(chars, 1))
    i = _ws(chars, i)
    i <= length(chars) && error("trailing characters at $i")
    return v
end

function _ws(c, i)
    while i <= length(c) && c[i] in (' ', '\n', '\r', '\t')
        i += 1
    end
    return i
end

function _value(c, i)
    i > length(c) && error("unexpected end of JSON")
    ch = c[i]
    if ch == '{'
        d = Dict{String, Any}()
        i = _ws(c, i + 1)
        if c[i] == '}'
            return d, i + 1
        end
        while true
            k, i = _string(c, _ws(c, i))
            i = _ws(c, i)
            c[i] == ':' || error("expected : at $i")
            v, i = _value(c, _ws(c, i + 1))
            d[k] = v
            i = _ws(c, i)
            if c[i] == ','
                i += 1
            elseif c[i] == '}'
                return d, i + 1
            else
                error("expected , or } at $i")
            end
        end
    elseif ch == '['
        a = Any[]
        i = _ws(c, i + 1)
        if c[i] == ']'
            return a, i + 1
        end
        while true
            v, i = _value(c, _ws(c, i))
            push!(a, v)
            i = _ws(c, i)
            if c[i] == ','
                i += 1
            elseif c[i] == ']'
                return a, i + 1
            else
                error("expected , or ] at $i")
            end
        end
    elseif ch == '"'
        return _string(c, i)
    elseif ch == 't'
        return true, i + 4
    elseif ch == 'f'
        return false, i + 5
    elseif ch == 'n'
        return nothing, i + 4
    else
        j = i
        while j <= length(c) && (isdigit(c[j]) || c[j] in ('-', '+', '.', 'e', 'E'))
            j += 1
        end
        t = String(c[i:j - 1])
        v = occursin(r"[.eE]", t) ? parse(Float64, t) : parse(Int, t)
        return v, j
    end
end

function _string(c, i)
    c[i] == '"' || error("expected string at $i")
    io = IOBuffer()
    i += 1
    while c[i] != '"'
        if c[i] == '\\'
            e = c[i + 1]
            if e == 'u'
                write(io, Char(parse(UInt16, String(c[i + 2:i + 5]); base = 16)))
                i += 6
                continue
            end
            write(
                io,
                e == 'n' ?
                    '\n' :
                    e == 't' ?
                        '\t' :
                        e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f' : e,
            )
            i += 2
        else
            write(io, c[i])
            i += 1
        end
    end
    return String(take!(io)), i + 1
end

end # module
