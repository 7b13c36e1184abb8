// Package specedit makes the spec edits tests rehearse on a copy of a real
// keyspec.yaml: moving a database (and its channels) to a server of its own.
// Edits work on the YAML tree, so comments and the order of entries stay.
package specedit

import (
	"bytes"
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// ErrNotFound: the spec has no entry the edit names.
var ErrNotFound = errors.New("spec entry not found")

// Split describes moving one database of an instance to a server of its own.
type Split struct {
	Instance string
	DB       string
	Server   string // the new server's name under the instance's servers
	// Section is the new server's section as YAML (persistence, eviction, ...).
	Section string
	// Channels are the channels whose messages move with the database.
	Channels []string
}

// MoveDB returns src with s applied: the instance gains s.Server under servers,
// the database and each channel name it in their server field.
func MoveDB(src []byte, s Split) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("specedit: %w", err)
	}
	if len(doc.Content) != 1 {
		return nil, fmt.Errorf("specedit: not one YAML document")
	}
	root := doc.Content[0]
	in, err := path(root, "instances", s.Instance)
	if err != nil {
		return nil, err
	}
	var section yaml.Node
	if err := yaml.Unmarshal([]byte(s.Section), &section); err != nil || len(section.Content) != 1 || section.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("specedit: server section of %s: want a YAML mapping (%v)", s.Server, err)
	}
	servers := get(in, "servers")
	if servers == nil {
		servers = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		insertAfter(in, "server", "servers", servers)
	}
	if get(servers, s.Server) != nil {
		return nil, fmt.Errorf("specedit: instance %s already has a server %s", s.Instance, s.Server)
	}
	set(servers, s.Server, section.Content[0])
	db, err := path(in, "dbs", s.DB)
	if err != nil {
		return nil, err
	}
	set(db, "server", scalar(s.Server))
	for _, c := range s.Channels {
		ch, err := path(root, "channels", c)
		if err != nil {
			return nil, err
		}
		set(ch, "server", scalar(s.Server))
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("specedit: %w", err)
	}
	return out.Bytes(), nil
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }

// path walks mapping keys from n.
func path(n *yaml.Node, keys ...string) (*yaml.Node, error) {
	for i, k := range keys {
		next := get(n, k)
		if next == nil || next.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("specedit: %v: %w", keys[:i+1], ErrNotFound)
		}
		n = next
	}
	return n, nil
}

// get is the value of key in mapping n, or nil.
func get(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// set puts key: v in mapping n, replacing a value already there.
func set(n *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			n.Content[i+1] = v
			return
		}
	}
	n.Content = append(n.Content, scalar(key), v)
}

// insertAfter puts key: v in mapping n right after the entry after, or last.
func insertAfter(n *yaml.Node, after, key string, v *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == after {
			rest := append([]*yaml.Node{scalar(key), v}, n.Content[i+2:]...)
			n.Content = append(n.Content[:i+2], rest...)
			return
		}
	}
	n.Content = append(n.Content, scalar(key), v)
}
