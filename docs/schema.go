package docs

import _ "embed"

// KeyspecSchema is the JSON Schema of keyspec.yaml (keyspec.schema.json in this
// folder): what luagen init writes beside a new spec and luagen schema prints,
// for editors that validate and complete the spec as it is typed.
//
//go:embed keyspec.schema.json
var KeyspecSchema []byte
