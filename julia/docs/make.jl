# The API reference of CDTypes.jl (Documenter), built where Julia exists:
#
#     julia --project=julia/docs -e 'using Pkg; Pkg.develop(path="julia"); Pkg.instantiate()'
#     julia --project=julia/docs julia/docs/make.jl        # -> julia/docs/build/index.html
#
# Without Julia, julia/tools/check_docs.py (julia/check.sh) checks what makedocs would: every
# exported name has a docstring, every @docs entry names one, and every documented public name
# is on a page. MPI is loaded so that the extension's methods (CDTypes.send / recv on an
# MPI.Comm, mpi_attach) are documented too.
using Documenter
using MPI
using CDTypes

makedocs(;
    sitename = "CDTypes.jl",
    modules = [CDTypes],
    pages = ["API reference" => "index.md"],
    format = Documenter.HTML(; prettyurls = false),
    remotes = nothing,
    checkdocs = :exports,
    warnonly = false,
)
