import LookupEngine

extension UseCaseLoader {
    /// Loads a use case as the service config names it.
    public static func load(_ useCase: ServiceConfig.UseCase) throws -> LoadedUseCase {
        try load(name: useCase.name, fileStem: useCase.fileStem, shardCount: useCase.shardCount, manifest: useCase.manifest)
    }
}
