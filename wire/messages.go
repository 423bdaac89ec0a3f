package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"senseboard/resource"
)

// HelloMsg opens a session. Session is a random token the client chooses;
// the device echoes it in Welcome and Refuse, so that a client sharing a
// line with another can tell which answer is its own. Serial names the
// device the client wants: required on a port that serves a fleet of
// devices, and, when given to a single device, it must be that device's.
type HelloMsg struct {
	Protocol int    `json:"protocol"`
	Client   string `json:"client"`
	Session  string `json:"session"`
	Serial   string `json:"serial,omitempty"`
}

// WelcomeMsg accepts a session and says what the device is.
type WelcomeMsg struct {
	Protocol   int    `json:"protocol"`
	Session    string `json:"session"`
	Serial     string `json:"serial"`
	Product    string `json:"product"`
	SW         string `json:"sw"`
	URIPrefix  string `json:"uriPrefix"`
	MaxPayload int    `json:"maxPayload"`
}

// RefuseMsg refuses a session: Code says why for programs (empty from
// devices that predate codes), Error for people.
type RefuseMsg struct {
	Session string     `json:"session"`
	Error   string     `json:"error"`
	Code    RefuseCode `json:"code,omitempty"`
}

// RequestMsg is a request.
type RequestMsg struct {
	Op     string  `json:"op"`
	Path   string  `json:"path"`
	Params []Param `json:"params,omitempty"`
}

// EndedMsg says why a subscription ended.
type EndedMsg struct {
	Reason string `json:"reason"`
}

// ErrorMsg says what was wrong with a frame.
type ErrorMsg struct {
	Error string `json:"error"`
}

// AdvertMsg is what a scan sees of a device: whether it advertises, and
// its advertisement and scan response packets as they go over the air.
type AdvertMsg struct {
	Serial      string `json:"serial"`
	Address     string `json:"address"`
	Advertising bool   `json:"advertising"`
	Adv         []byte `json:"adv,omitempty"`
	ScanResp    []byte `json:"scanResp,omitempty"`
}

// ConnectMsg connects a central, named by its BLE address, to the device.
// Interval is the connection interval the central asks for, in units of
// 1.25 ms (6..3200); zero leaves it to the device.
type ConnectMsg struct {
	Address  string `json:"address"`
	Name     string `json:"name,omitempty"`
	Interval uint16 `json:"interval,omitempty"`
}

// ConnectedMsg accepts a connection: its handle and the connection
// interval granted, in units of 1.25 ms.
type ConnectedMsg struct {
	Handle   uint16 `json:"handle"`
	Interval uint16 `json:"interval,omitempty"`
}

// PairMsg pairs over the connection, with the device's pass key when it
// has one, and bonds when Bond is set.
type PairMsg struct {
	PassKey string `json:"passKey,omitempty"`
	Bond    bool   `json:"bond"`
}

// EncryptMsg encrypts the connection with the key of an earlier bond.
type EncryptMsg struct {
	Key string `json:"key"`
}

// PairedMsg says the link is encrypted; Key is the long-term key the
// central keeps after bonding, empty when it did not bond.
type PairedMsg struct {
	Key string `json:"key,omitempty"`
}

// DisconnectedMsg says why the connection ended.
type DisconnectedMsg struct {
	Reason string `json:"reason"`
}

// HRSNotifyMsg switches the central's heart rate notifications.
type HRSNotifyMsg struct {
	On bool `json:"on"`
}

// NUSMsg is data of the serial service, either way (base64 in JSON).
type NUSMsg struct {
	Data []byte `json:"data"`
}

// GATTService is one GATT service of a device, with its characteristics.
type GATTService struct {
	UUID            string               `json:"uuid"`
	Characteristics []GATTCharacteristic `json:"characteristics"`
}

// GATTCharacteristic is a characteristic and what a central may do with
// it: "read", "write", "write-without-response", "notify".
type GATTCharacteristic struct {
	UUID       string   `json:"uuid"`
	Properties []string `json:"properties"`
}

// GATTServicesMsg lists the device's GATT services.
type GATTServicesMsg struct {
	Services []GATTService `json:"services"`
}

// GATTMTUMsg chooses the connection's ATT MTU.
type GATTMTUMsg struct {
	MTU int `json:"mtu"`
}

// GATTWriteMsg writes to a characteristic (data in base64 in JSON).
type GATTWriteMsg struct {
	Char string `json:"char"`
	Data []byte `json:"data"`
}

// GATTNotifyMsg switches the notifications of a characteristic.
type GATTNotifyMsg struct {
	Char string `json:"char"`
	On   bool   `json:"on"`
}

// GATTNotificationMsg is a notification of a characteristic.
type GATTNotificationMsg struct {
	Char string `json:"char"`
	Data []byte `json:"data"`
}

// GATTReadMsg reads a characteristic.
type GATTReadMsg struct {
	Char string `json:"char"`
}

// GATTValueMsg is the value of a characteristic that was read.
type GATTValueMsg struct {
	Char string `json:"char"`
	Data []byte `json:"data"`
}

// Param is one value of a request: its type name as the serial tool gives it
// (a primitive type or a record name; empty for an untyped JSON value) and
// the value as JSON.
type Param struct {
	Type  string          `json:"type,omitempty"`
	Value json.RawMessage `json:"value"`
}

// EncodeParam encodes a value for a request.
func EncodeParam(v resource.Value) Param {
	p := Param{Value: v.AppendJSON(nil)}
	switch v.Type() {
	case resource.TypeRecord:
		p.Type = v.Name()
	case resource.TypeJSON:
	default:
		p.Type = v.Type().String()
	}
	return p
}

// DecodeParam decodes a request value, keeping its type.
func DecodeParam(p Param) (resource.Value, error) {
	raw := bytes.TrimSpace(p.Value)
	if len(raw) == 0 {
		return resource.Value{}, fmt.Errorf("parameter of type %q has no value", p.Type)
	}
	if p.Type == "" {
		return resource.JSON(raw)
	}
	if p.Type == "null" {
		if string(raw) != "null" {
			return resource.Value{}, fmt.Errorf("null parameter: its value is %s; want null", clip(raw))
		}
		return resource.Null(), nil
	}
	if p.Type == "string" {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return resource.Value{}, fmt.Errorf("string parameter: %s is not a JSON string", clip(raw))
		}
		return resource.ParseValue("string", s)
	}
	for _, name := range resource.PrimitiveTypeNames() {
		if p.Type == name {
			text := string(raw)
			if name == "bool" && text != "true" && text != "false" {
				return resource.Value{}, fmt.Errorf("bool parameter: %s is not true or false", clip(raw))
			}
			if name != "bool" {
				if _, err := strconv.ParseFloat(text, 64); err != nil {
					return resource.Value{}, fmt.Errorf("%s parameter: %s is not a JSON number", name, clip(raw))
				}
			}
			return resource.ParseValue(name, text)
		}
	}
	return resource.ParseValue(p.Type, string(raw))
}

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// AppendJSONFrame appends a frame whose payload is v encoded as JSON.
func AppendJSONFrame(dst []byte, kind Kind, id uint32, v any) ([]byte, error) {
	start := len(dst)
	dst = BeginFrame(dst, kind, id)
	var err error
	if dst, err = resource.AppendJSON(dst, v); err != nil {
		return dst[:start], err
	}
	return EndFrame(dst, start), nil
}

// AppendEnvelope appends a Response frame carrying an envelope.
func AppendEnvelope(dst []byte, id uint32, env *resource.Envelope) ([]byte, error) {
	start := len(dst)
	dst = BeginFrame(dst, Response, id)
	var err error
	if dst, err = env.AppendJSON(dst); err != nil {
		return dst[:start], err
	}
	return EndFrame(dst, start), nil
}
