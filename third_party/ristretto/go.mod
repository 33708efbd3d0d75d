module github.com/dgraph-io/ristretto/v2

go 1.23.0

toolchain go1.24.1

require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/dgryski/go-farm v0.0.0-20240924180020-3414d57e47da
	github.com/dustin/go-humanize v1.0.1
	github.com/stretchr/testify v1.10.0
	golang.org/x/sys v0.31.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
