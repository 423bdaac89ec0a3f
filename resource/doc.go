// Package resource owns the device's request model: operations, status codes,
// typed parameter values, requests and responses, the response envelope, the
// router over path templates, and the subscription machinery (topics, clients,
// bounded notification queues).
//
// Nothing here knows about transports, interface definitions or particular
// resources: a transport turns bytes into a Request and an Envelope or
// Notification back into bytes, and a provider only sees bound requests.
package resource
