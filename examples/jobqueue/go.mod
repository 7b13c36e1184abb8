module github.com/hanchat/luagen/examples/jobqueue

go 1.26.0

require (
	github.com/hanchat/luagen v0.0.0
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	github.com/aymanbagabas/go-udiff v0.4.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dave/jennifer v1.7.1 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/vmihailenco/msgpack/v5 v5.4.1 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	github.com/yuin/gopher-lua v1.1.2 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace github.com/hanchat/luagen => ../..

tool github.com/hanchat/luagen/cmd/luagen
