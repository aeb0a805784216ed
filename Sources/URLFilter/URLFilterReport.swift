/// The body of `POST /report`: URLs a device's URL filter matched (`callveil.urlfilter.v1.URLFilterReport`).
public typealias ProtoURLFilterReport = Callveil_Urlfilter_V1_URLFilterReport
