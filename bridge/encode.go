package bridge

import (
	"encoding/json"

	"senseboard/phone"
	"senseboard/resource"
)

// The JSON messages the bridge sends its clients. Each has a type:
//
//	{"type":"response","id":"1","device":"000123","response":200,...}  the envelope of an answer
//	{"type":"notification","id":"2","device":"000123","uri":"/net/000123/Meas/HR","content":{...}}
//	{"type":"ended","id":"2","device":"000123","uri":"...","reason":"..."}  a subscription the device ended
//	{"type":"error","id":"1","error":"..."}  a message the bridge could not carry out
//	{"type":"device","device":{...}}  a device's state changed (DeviceState)
//	{"type":"hrs","device":"000123","content":{"average":72,"rrData":[833]}}  heart rate the device sent over BLE
//	{"type":"nus","device":"000123","content":{"data":[1,2,3]}}  serial service data the device sent

// appendHead appends {"type":<typ>,"id":<id>,"device":<serial> without
// closing the object; id and device are left out when empty.
func appendHead(b []byte, typ string, id ID, serial string) []byte {
	b = append(b, `{"type":`...)
	b = resource.AppendString(b, typ)
	if id != "" {
		b = append(b, `,"id":`...)
		b = resource.AppendString(b, string(id))
	}
	if serial != "" {
		b = append(b, `,"device":`...)
		b = resource.AppendString(b, serial)
	}
	return b
}

// answerJSON is a response message: the device's envelope with the
// message's id and the device's serial number in front.
func answerJSON(id ID, a *Answer) []byte {
	b := appendHead(nil, "response", id, a.Device)
	raw := a.Envelope.Raw
	if len(raw) > 2 && raw[0] == '{' {
		b = append(b, ',')
		return append(b, raw[1:]...)
	}
	return append(b, '}')
}

// errorJSON is an error message.
func errorJSON(id ID, err error) []byte {
	b := appendHead(nil, "error", id, "")
	b = append(b, `,"error":`...)
	b = resource.AppendString(b, err.Error())
	return append(b, '}')
}

// eventJSON is a notification or ended message of subscription id.
func eventJSON(id ID, e *phone.Event) []byte {
	typ := "notification"
	if e.Ended {
		typ = "ended"
	}
	b := appendHead(nil, typ, id, e.Device)
	b = append(b, `,"uri":`...)
	b = resource.AppendString(b, e.URI)
	if e.Ended {
		b = append(b, `,"reason":`...)
		b = resource.AppendString(b, e.Reason)
	} else {
		b = append(b, `,"content":`...)
		b = append(b, e.Content...)
	}
	return append(b, '}')
}

// deviceJSON is a device message.
func deviceJSON(s phone.DeviceState) []byte {
	b := appendHead(nil, "device", "", "")
	d, _ := json.Marshal(s)
	b = append(b, `,"device":`...)
	b = append(b, d...)
	return append(b, '}')
}

// serviceJSON is an hrs or nus message.
func serviceJSON(serial, service string, content []byte) []byte {
	b := appendHead(nil, service, "", serial)
	b = append(b, `,"content":`...)
	b = append(b, content...)
	return append(b, '}')
}
