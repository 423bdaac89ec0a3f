package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	oaerrors "github.com/go-openapi/errors"
	"github.com/go-openapi/spec"
	"github.com/go-openapi/strfmt"
	"github.com/go-openapi/validate"

	"senseboard/resource"
)

// MaxBody is the largest request body accepted, in bytes of its JSON or text.
const MaxBody = 4096

// Bind converts the request's path parameters and values to the types op
// declares, checks them against the declared constraints, and sets req.Args:
// path parameters in pattern order, then the operation's parameters. Path
// segments given as {Name} placeholders take the first values. An optional
// parameter that was not given is the invalid Value. Bind fails with 400, or
// 413 for a body over MaxBody bytes.
func (o *Operation) Bind(req *resource.Request) *resource.Error {
	args := req.ArgStore(len(o.Params))
	values := req.Params
	npath := len(o.Resource.PathParams)
	for i := range npath {
		p := o.Params[i]
		var v resource.Value
		var err error
		if req.Match.Placeholder(i) {
			if len(values) == 0 {
				return badRequest("no value for path parameter %s (%s); give it as the first value", p.Name, p.describe())
			}
			v, values = values[0], values[1:]
			v, err = p.bind(v)
		} else {
			v, err = p.parse(req.Match.Raw(i))
		}
		if err != nil {
			return badRequest("%v", err)
		}
		args = append(args, v)
	}
	rest := o.Params[npath:]
	if len(values) > len(rest) {
		if len(rest) == 0 {
			return badRequest("%s takes no parameters; %d given", o.name(), len(values))
		}
		return badRequest("%s takes at most %s (%s); %d given", o.name(), plural(len(rest), "parameter"), o.signature(), len(values))
	}
	for i, p := range rest {
		if i >= len(values) {
			if p.Required {
				return badRequest("missing parameter %s (%s); %s takes %s, in this order", p.Name, p.describe(), o.name(), o.signature())
			}
			args = append(args, resource.Value{})
			continue
		}
		v := values[i]
		if n := len(v.Str()); n > MaxBody {
			return &resource.Error{Status: resource.StatusPayloadTooLarge,
				Msg: fmt.Sprintf("parameter %s is %d bytes; at most %d are allowed", p.Name, n, MaxBody)}
		}
		b, err := p.bind(v)
		if err != nil {
			return badRequest("%v", err)
		}
		args = append(args, b)
	}
	req.Args = args
	return nil
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func badRequest(format string, a ...any) *resource.Error {
	return &resource.Error{Status: resource.StatusBadRequest, Msg: fmt.Sprintf(format, a...)}
}

func (o *Operation) name() string {
	return strings.ToUpper(o.Op.String()) + " " + o.Resource.Path
}

// signature lists the operation's non-path parameters with their types.
func (o *Operation) signature() string {
	var parts []string
	for _, p := range o.Params[len(o.Resource.PathParams):] {
		parts = append(parts, p.Name+" ("+p.TypeName()+")")
	}
	return strings.Join(parts, ", ")
}

// describe says what a parameter takes, for messages: its type, and its
// allowed values or range.
func (p *Param) describe() string {
	s := p.TypeName()
	if len(p.Enum) > 0 {
		return s + ", one of " + p.enumList()
	}
	if !p.Type.IsInt() && !p.Type.IsFloat() {
		return s
	}
	lo, hi := "", ""
	if p.Type.IsInt() {
		l, h := p.Type.IntRange()
		lo, hi = strconv.FormatInt(l, 10), strconv.FormatUint(h, 10)
	}
	if p.Minimum != nil {
		lo = num(*p.Minimum)
	}
	if p.Maximum != nil {
		hi = num(*p.Maximum)
	}
	if lo == "" && hi == "" {
		return s
	}
	return s + ", " + lo + ".." + hi
}

// num formats a limit as people write it: 16777215, not 1.6777215e+07.
func num(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e18 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// shown shortens a value quoted in a message: a long one keeps its start
// and an ellipsis, so that an error does not echo a whole body back.
func shown(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… (" + strconv.Itoa(len(s)) + " bytes)"
}

func (p *Param) enumList() string {
	parts := make([]string, len(p.Enum))
	for i, e := range p.Enum {
		parts[i] = fmt.Sprint(e)
	}
	return strings.Join(parts, ", ")
}

// parse converts the text of a path segment.
func (p *Param) parse(text string) (resource.Value, error) {
	switch {
	case p.Type.IsInt():
		v, err := resource.ParseInt(p.Type, text)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return v, fmt.Errorf("%s %s does not fit %s", p.Name, shown(text), p.describe())
			}
			return v, fmt.Errorf("%s %q is not an integer (%s)", p.Name, shown(text), p.describe())
		}
		return p.check(v)
	case p.Type == resource.TypeString:
		return p.check(resource.String(text))
	}
	return resource.Value{}, fmt.Errorf("%s: path parameters of type %s are not supported", p.Name, p.Type)
}

// bind converts a given value to the declared type and checks it.
func (p *Param) bind(v resource.Value) (resource.Value, error) {
	got := v.Type()
	if got == resource.TypeJSON {
		return p.bindJSON(v.Str())
	}
	switch {
	case p.Type.IsInt():
		if !got.IsInt() {
			break
		}
		lo, hi := p.Type.IntRange()
		if got.IsSigned() && (v.Int() < lo || v.Int() >= 0 && uint64(v.Int()) > hi) || !got.IsSigned() && v.Uint() > hi {
			return v, fmt.Errorf("parameter %s: %s does not fit %s (%d..%d)", p.Name, v, p.Type, lo, hi)
		}
		if got.IsSigned() {
			return p.check(resource.IntOf(p.Type, v.Int()))
		}
		return p.check(resource.IntOf(p.Type, int64(v.Uint())))
	case p.Type.IsFloat():
		if !got.IsInt() && !got.IsFloat() {
			break
		}
		if p.Type == resource.TypeFloat32 {
			return p.check(resource.Float(float32(v.Float())))
		}
		return p.check(resource.Double(v.Float()))
	case p.Type == resource.TypeString:
		if got == resource.TypeString {
			return p.check(v)
		}
	case p.Type == resource.TypeBool:
		if got == resource.TypeBool {
			return v, nil
		}
	case p.Type == resource.TypeRecord || p.Type == resource.TypeJSON:
		if got == resource.TypeRecord {
			if p.Record != "" && v.Name() != p.Record {
				return v, fmt.Errorf("parameter %s is a %s record; %s given", p.Name, p.Record, v.Name())
			}
			return p.bindJSON(v.Str())
		}
	}
	return v, fmt.Errorf("parameter %s takes %s; %s given", p.Name, p.describe(), got)
}

// bindJSON converts JSON text, as the phone bridge and records carry it.
func (p *Param) bindJSON(text string) (resource.Value, error) {
	if err := resource.CheckJSON([]byte(text)); err != nil {
		return resource.Value{}, fmt.Errorf("parameter %s: %v", p.Name, err)
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return resource.Value{}, fmt.Errorf("parameter %s: not JSON: %v", p.Name, err)
	}
	if dec.More() {
		return resource.Value{}, fmt.Errorf("parameter %s: more than one JSON value", p.Name)
	}
	switch p.Type {
	case resource.TypeRecord, resource.TypeJSON:
		return p.bindDocument(x)
	case resource.TypeBool:
		b, ok := x.(bool)
		if !ok {
			return resource.Value{}, fmt.Errorf("parameter %s takes a bool; %s given", p.Name, jsonKind(x))
		}
		return resource.Bool(b), nil
	case resource.TypeString:
		s, ok := x.(string)
		if !ok {
			return resource.Value{}, fmt.Errorf("parameter %s takes a string; %s given", p.Name, jsonKind(x))
		}
		return p.check(resource.String(s))
	}
	n, ok := x.(json.Number)
	if !ok {
		return resource.Value{}, fmt.Errorf("parameter %s takes %s; %s given", p.Name, p.describe(), jsonKind(x))
	}
	if p.Type.IsFloat() {
		f, err := n.Float64()
		if err != nil {
			return resource.Value{}, fmt.Errorf("parameter %s: %s is not a number", p.Name, shown(n.String()))
		}
		return p.bind(resource.Double(f))
	}
	v, err := resource.ParseInt(p.Type, n.String())
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return v, fmt.Errorf("parameter %s: %s does not fit %s", p.Name, shown(n.String()), p.describe())
		}
		return v, fmt.Errorf("parameter %s takes an integer (%s); %s given", p.Name, p.describe(), shown(n.String()))
	}
	return p.check(v)
}

func jsonKind(x any) string {
	switch x.(type) {
	case nil:
		return "null"
	case bool:
		return "a bool"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	}
	return "an object"
}

// bindDocument checks a record or array body against the schema and returns
// it as a Record value with the keys spelled as declared.
func (p *Param) bindDocument(x any) (resource.Value, error) {
	name := p.Record
	if name == "" {
		name = p.Name
	}
	canon, err := canonicalize(x, p.Schema, "")
	if err != nil {
		return resource.Value{}, fmt.Errorf("%s: %v", name, err)
	}
	if err := validateSchema(p.Schema, withoutNullables(canon, p.Schema)); err != nil {
		return resource.Value{}, fmt.Errorf("%s: %v", name, err)
	}
	text, err := json.Marshal(canon)
	if err != nil {
		return resource.Value{}, fmt.Errorf("%s: %v", name, err)
	}
	if p.Type == resource.TypeJSON {
		return resource.JSON(text)
	}
	return resource.RecordJSON(name, text)
}

// check applies enum, range, length and pattern constraints to a primitive.
func (p *Param) check(v resource.Value) (resource.Value, error) {
	if len(p.Enum) > 0 {
		for _, e := range p.Enum {
			switch e := e.(type) {
			case string:
				if v.Type() == resource.TypeString && strings.EqualFold(e, v.Str()) {
					return resource.String(e), nil
				}
			default:
				if f, ok := toFloat(e); ok && (v.Type().IsInt() || v.Type().IsFloat()) && f == v.Float() {
					return v, nil
				}
			}
		}
		return v, fmt.Errorf("parameter %s: %s is not allowed; allowed: %s", p.Name, shown(v.String()), p.enumList())
	}
	if v.Type().IsInt() || v.Type().IsFloat() {
		f := v.Float()
		if p.Minimum != nil && f < *p.Minimum || p.Maximum != nil && f > *p.Maximum {
			return v, fmt.Errorf("parameter %s: %s is out of range (%s)", p.Name, shown(v.String()), p.describe())
		}
	}
	if v.Type() == resource.TypeString {
		if p.MaxLength != nil && int64(len([]rune(v.Str()))) > *p.MaxLength {
			return v, fmt.Errorf("parameter %s: longer than %d characters", p.Name, *p.MaxLength)
		}
		if p.pattern != nil && !p.pattern.MatchString(v.Str()) {
			hint := ""
			if p.Description != "" {
				hint = " (" + strings.TrimSuffix(p.Description, ".") + ")"
			}
			return v, fmt.Errorf("parameter %s: %q does not match %s%s", p.Name, shown(v.Str()), p.Pattern, hint)
		}
	}
	return v, nil
}

func toFloat(x any) (float64, bool) {
	switch x := x.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return math.NaN(), false
}

// normKey folds a record key for matching: lower case, without - and _.
func normKey(k string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' {
			return -1
		}
		return r
	}, strings.ToLower(k))
}

// canonicalize returns x with every object key spelled as the schema declares
// it, matching keys in any case and ignoring - and _. A key the schema does not
// declare is an error naming the allowed keys.
func canonicalize(x any, s *spec.Schema, at string) (any, error) {
	if s == nil {
		return x, nil
	}
	switch x := x.(type) {
	case map[string]any:
		if len(s.Properties) == 0 {
			return x, nil
		}
		out := make(map[string]any, len(x))
		for k, v := range x {
			name, prop, ok := property(s, k)
			if !ok {
				return nil, fmt.Errorf("unknown field %s; allowed: %s", at+k, strings.Join(propertyNames(s), ", "))
			}
			if _, dup := out[name]; dup {
				return nil, fmt.Errorf("field %s given twice", at+name)
			}
			cv, err := canonicalize(v, &prop, at+name+".")
			if err != nil {
				return nil, err
			}
			out[name] = cv
		}
		return out, nil
	case json.Number:
		if !s.Type.Contains("integer") {
			return x, nil
		}
		// JSON does not tell 4 from 4.0: a whole number fits an integer
		if _, err := x.Int64(); err == nil {
			return x, nil
		}
		f, err := x.Float64()
		if err != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
			return nil, fmt.Errorf("field %s takes an integer; %s given", strings.TrimSuffix(at, "."), shown(x.String()))
		}
		return json.Number(strconv.FormatInt(int64(f), 10)), nil
	case []any:
		if s.Items == nil || s.Items.Schema == nil {
			return x, nil
		}
		out := make([]any, len(x))
		for i, v := range x {
			cv, err := canonicalize(v, s.Items.Schema, fmt.Sprintf("%s%d.", at, i))
			if err != nil {
				return nil, err
			}
			out[i] = cv
		}
		return out, nil
	}
	return x, nil
}

func property(s *spec.Schema, key string) (string, spec.Schema, bool) {
	if p, ok := s.Properties[key]; ok {
		return key, p, true
	}
	nk := normKey(key)
	for name, p := range s.Properties {
		if normKey(name) == nk {
			return name, p, true
		}
	}
	return "", spec.Schema{}, false
}

func propertyNames(s *spec.Schema) []string {
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// withoutNullables returns a copy of x without the null values of properties
// the schema marks x-nullable, which go-openapi's validator does not know.
func withoutNullables(x any, s *spec.Schema) any {
	if s == nil {
		return x
	}
	switch x := x.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			prop, ok := s.Properties[k]
			if !ok {
				out[k] = v
				continue
			}
			if v == nil && nullable(&prop) {
				continue
			}
			out[k] = withoutNullables(v, &prop)
		}
		return out
	case []any:
		if s.Items == nil || s.Items.Schema == nil {
			return x
		}
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = withoutNullables(v, s.Items.Schema)
		}
		return out
	}
	return x
}

func nullable(s *spec.Schema) bool {
	b, _ := s.Extensions.GetBool("x-nullable")
	return b || s.Nullable
}

// validateSchema validates x against s with go-openapi and words the errors
// for a person.
func validateSchema(s *spec.Schema, x any) error {
	err := validate.AgainstSchema(s, x, strfmt.Default)
	if err == nil {
		return nil
	}
	var msgs []string
	var ce *oaerrors.CompositeError
	if errors.As(err, &ce) {
		for _, e := range ce.Errors {
			msgs = append(msgs, strings.Replace(e.Error(), " in body ", " ", 1))
		}
	} else {
		msgs = append(msgs, err.Error())
	}
	slices.Sort(msgs)
	return errors.New(strings.Join(msgs, "; "))
}

// CheckContent checks content as a device sends it against a response or
// notification schema: every declared constraint, every required field, and
// no field the schema does not declare (with its declared spelling). Tests use
// it to hold providers to their definitions.
func CheckContent(s *spec.Schema, content any) error {
	b, err := resource.AppendJSON(nil, content)
	if err != nil {
		return err
	}
	// integers as json.Number for the exact range checks of strictKeys;
	// as float64 for go-openapi, which takes json.Number for a string
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var exact, x any
	if err := dec.Decode(&exact); err != nil {
		return fmt.Errorf("content is not JSON: %w", err)
	}
	if err := strictKeys(exact, s, "value."); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	return validateSchema(s, withoutNullables(x, s))
}

func strictKeys(x any, s *spec.Schema, at string) error {
	if s == nil {
		return nil
	}
	switch x := x.(type) {
	case json.Number:
		if !s.Type.Contains("integer") || s.Format == "" {
			return nil
		}
		t, err := typeOf("integer", s.Format)
		if err != nil {
			return nil
		}
		if _, err := resource.ParseInt(t, x.String()); err != nil {
			return fmt.Errorf("field %s: %s does not fit %s", strings.TrimSuffix(at, "."), x, s.Format)
		}
	case map[string]any:
		if len(s.Properties) == 0 {
			return nil
		}
		for k, v := range x {
			prop, ok := s.Properties[k]
			if !ok {
				return fmt.Errorf("field %s is not declared; declared: %s", at+k, strings.Join(propertyNames(s), ", "))
			}
			if err := strictKeys(v, &prop, at+k+"."); err != nil {
				return err
			}
		}
	case []any:
		if s.Items == nil || s.Items.Schema == nil {
			return nil
		}
		for i, v := range x {
			if err := strictKeys(v, s.Items.Schema, fmt.Sprintf("%s%d.", at, i)); err != nil {
				return err
			}
		}
	}
	return nil
}
