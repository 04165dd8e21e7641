import BlueLibraryAPI

/// The five albums the tutorial's `PersistencyManager init` built, exactly and in order
/// (seed notes §3). The tutorial stored the years as strings; here they are numbers.
public enum SeedAlbums {
    public static let inputs: [AlbumInput] = [
        seed("Best of Bowie", "David Bowie", 1992, "album_david_bowie_best_of_bowie.png"),
        seed("It's My Life", "No Doubt", 2003, "album_no_doubt_its_my_life_bathwater.png"),
        seed("Nothing Like The Sun", "Sting", 1999, "album_sting_nothing_like_the_sun.png"),
        seed("Staring at the Sun", "U2", 2000, "album_u2_staring_at_the_sun.png"),
        seed("American Pie", "Madonna", 2000, "album_madonna_american_pie.png"),
    ]

    private static func seed(_ title: String, _ artist: String, _ year: Int, _ file: String) -> AlbumInput {
        AlbumInput(
            validTitle: title, artist: artist, genre: Album.defaultGenre, year: year,
            coverUrl: "https://s3.amazonaws.com/CoverProject/album/" + file)
    }
}
