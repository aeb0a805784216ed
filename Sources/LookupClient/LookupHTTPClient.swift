import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Posts protobuf bodies to a Live Caller ID Lookup server with the headers a device sends.
public struct LookupHTTPClient: Sendable {
    /// The server's base URL, e.g. `http://127.0.0.1:8080`.
    public let baseURL: String
    /// Largest response body read.
    public var maxResponseBytes = 64 << 20
    /// Per-request timeout.
    public var timeout: TimeAmount = .seconds(60)
    /// The connection pool (the process's shared one unless given: a load tool gives each source its own, so one
    /// source's requests never queue behind another's in the client).
    public let client: HTTPClient
    /// When set, every request goes through this Oblivious HTTP gateway to `baseURL`, as a device's does.
    public var oblivious: ObliviousRoute?
    /// When set, every exchange's sizes are recorded here.
    public var log: ExchangeLog?

    /// A client for `baseURL` (a trailing slash is dropped).
    public init(baseURL: String, client: HTTPClient = .shared) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.client = client
    }

    /// One HTTP exchange: status and body.
    public func send(method: HTTPMethod = .POST, path: String, headers: [(String, String)], body: [UInt8]?) async throws
        -> (status: Int, body: [UInt8]) {
        let answer = try await exchange(method: method, path: path, headers: headers, body: body)
        return (answer.status, answer.body)
    }

    /// One HTTP exchange with the response headers. Bodies the server gzip-encodes arrive decoded (the client
    /// sends `Accept-Encoding: deflate, gzip`, as devices do); `Content-Encoding` still tells.
    public func exchange(method: HTTPMethod = .POST, path: String, headers: [(String, String)], body: [UInt8]?) async throws
        -> (status: Int, headers: [(String, String)], body: [UInt8]) {
        if let oblivious {
            let answer = try await oblivious.exchange(client: client, targetURL: baseURL, method: method, path: path, headers: headers,
                                                      body: body, timeout: timeout, maxResponseBytes: maxResponseBytes)
            log?.append(.init(path: path, status: answer.status, requestBytes: body?.count ?? 0, responseBytes: answer.body.count,
                              wireRequestBytes: answer.wire.request, wireResponseBytes: answer.wire.response))
            return (answer.status, answer.headers, answer.body)
        }
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            if !request.headers.contains(name: "Content-Type") { request.headers.add(name: "Content-Type", value: "application/octet-stream") }
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response = try await client.execute(request, timeout: timeout)
        let buffer = try await response.body.collect(upTo: maxResponseBytes)
        log?.append(.init(path: path, status: Int(response.status.code), requestBytes: body?.count ?? 0, responseBytes: buffer.readableBytes))
        return (Int(response.status.code), response.headers.map { ($0.name, $0.value) }, Array(buffer.readableBytesView))
    }
}
