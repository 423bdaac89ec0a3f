// Package yamlnode reads the YAML (and so JSON) documents that scenarios and
// fault plans are written in, node by node, and names a node's value in the
// messages that refuse it.
package yamlnode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// ErrEmpty is a document with nothing in it.
var ErrEmpty = errors.New("empty")

// ErrMoreThanOne is data that holds more than one document.
var ErrMoreThanOne = errors.New("more than one document; give one")

// One parses data as exactly one YAML document (JSON is YAML) and returns
// its top node. An empty document's error says what is wanted instead.
func One(data []byte, want string) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var n yaml.Node
	if err := dec.Decode(&n); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w; want %s", ErrEmpty, want)
		}
		return nil, err
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, ErrMoreThanOne
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		return n.Content[0], nil
	}
	return &n, nil
}

// Scalar returns the text of a scalar, and for anything else a text that no
// value parser takes, so that a list or a mapping is refused, not read as "".
func Scalar(v *yaml.Node) string {
	if v.Kind == yaml.ScalarNode && v.Tag != "!!null" {
		return v.Value
	}
	return "(" + Describe(v) + ")"
}

// Describe names a value for a message: a mapping, a list, no value, or the
// scalar quoted.
func Describe(v *yaml.Node) string {
	switch {
	case v.Kind == yaml.MappingNode:
		return "a mapping"
	case v.Kind == yaml.SequenceNode:
		return "a list"
	case v.Kind != yaml.ScalarNode:
		return "not a plain value"
	case v.Tag == "!!null":
		return "no value"
	}
	return strconv.Quote(v.Value)
}
