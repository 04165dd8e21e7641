import HTTPServer
import TestThreads
import Testing

@testable import BlueLibraryServer

/// The cost classes of uncached list reads: which query shapes run in the read lane (expensive)
/// and which on the general workers (cheap), parameter by parameter.
@Suite(.ownThreads) struct ListReadCostTests {
    static func albums(_ query: String) -> Bool {
        ListReadCost.isExpensiveAlbumList(HTTPRequest(method: .get, target: query.isEmpty ? "/albums" : "/albums?" + query))
    }

    static func view(_ query: String) -> Bool {
        ListReadCost.isExpensiveViewList(HTTPRequest(method: .get, target: "/views/all/albums?" + query))
    }

    @Test(arguments: [
        "", "limit=50", "limit=500", "sort=title", "sort=-artist&limit=50", "sort=year", "sort=-createdAt", "sort=position",
        "cursor=abc", "sort=title&cursor=abc&limit=500", "offset=0", "offset=1000", "sort=title&offset=1000&limit=500",
        "count=false", "q=", "q=&limit=5", "pretty=true", "nc=7", "limit=50&offset=999&sort=-year",
        "offset=10&offset=999999",  // the first value counts, as the route reads it
    ])
    func boundedShapesAreCheap(_ query: String) {
        #expect(!Self.albums(query), "\(query)")
    }

    @Test(arguments: [
        "q=a", "q=ab&sort=title", "artist=X", "artist=", "genre=Rock", "yearFrom=1990", "yearTo=2000", "yearFrom=1990&yearTo=1995",
        "count=true", "count=", "count", "count=1", "count=true&limit=1", "offset=1001", "offset=2000000000", "sort=title&offset=5000",
        "offset=-1", "offset=abc", "offset=", "cursor=abc&artist=X", "limit=50&q=x&cursor=abc", "q=a&q=",
        "offset=999999&offset=10",
    ])
    func filtersCountsAndDeepOffsetsAreExpensive(_ query: String) {
        #expect(Self.albums(query), "\(query)")
    }

    @Test func aViewIsCheapToAShallowerOffset() {
        #expect(!Self.view("sort=title&offset=500&limit=50"))
        #expect(Self.view("sort=title&offset=501&limit=50"))
        #expect(Self.view("sort=title&offset=400000&limit=50"))
        #expect(!Self.view("sort=-year&cursor=abc"))
        #expect(Self.view("count=true"))
        #expect(Self.view("q=ab&sort=title"))
        #expect(!Self.albums("offset=501"), "an album list goes deeper")
    }
}
